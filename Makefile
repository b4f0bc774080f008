# The two commands of the README:
#   make demo   set everything up, bring the bundled cluster up, run the demo
#   make test   set everything up, run the unit and integration tests
# Both are idempotent and do all set-up on a fresh machine.

VENV    := .venv
PY      := $(VENV)/bin/python
DSBRA   := $(VENV)/bin/dsbra

.PHONY: setup demo test unit clean system-deps hadoop

setup: $(VENV)/.installed hadoop

# Debian packages the cluster needs (Java 17, Maven, iproute2, venv), installed only if missing
system-deps:
	@command -v java >/dev/null && command -v mvn >/dev/null && command -v ip >/dev/null \
	  && python3 -c 'import ensurepip' 2>/dev/null \
	  || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	      openjdk-17-jdk-headless maven iproute2 python3-venv)

# the Hadoop jars from Maven Central (hadoop/pom.xml) into .dsbra/hadoop/<version>; idempotent.
# 3.5.0 (Jersey 2 REST) is for the integration test that runs the collector on it.
hadoop: $(VENV)/.installed
	@$(DSBRA) cluster install
	@$(DSBRA) cluster install --version 3.5.0

$(VENV)/.installed: pyproject.toml | system-deps
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

unit: setup
	$(PY) -m pytest tests/unit

test: setup
	$(PY) -m pytest

# until the full demo exists: cluster up, a few files, a grep job, URLs and block locations
demo: setup
	$(PY) -m dsbra.cluster.demo

clean:
	rm -rf $(VENV) build *.egg-info
