# The two commands of the README:
#   make demo   set everything up, bring the bundled cluster up, run the demo
#   make test   set everything up, run every test: unit, integration (the secure and HA
#               clusters' too) and the demo's
# Both are idempotent and do all set-up on a fresh machine.

VENV    := .venv
PY      := $(VENV)/bin/python
DSBRA   := $(VENV)/bin/dsbra

.PHONY: setup demo test test-production unit clean system-deps ui-deps hadoop hive spark docker-deps placement placement-test

setup: $(VENV)/.installed hadoop placement

# Debian packages the cluster needs (Java 17, Maven, iproute2, venv), the Kerberos headers the
# gssapi extra builds against, MIT's KDC and kinit for the tests against a real KDC, and openssl
# for the --tls cluster's CA; installed only if missing
system-deps:
	@command -v java >/dev/null && command -v mvn >/dev/null && command -v ip >/dev/null \
	  && python3 -c 'import ensurepip' 2>/dev/null && command -v krb5-config >/dev/null \
	  && command -v krb5kdc >/dev/null && command -v kinit >/dev/null && command -v openssl >/dev/null \
	  || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	      openjdk-17-jdk-headless maven iproute2 python3-venv libkrb5-dev gcc \
	      krb5-kdc krb5-admin-server krb5-user openssl)

# the Hadoop jars from Maven Central (hadoop/pom.xml) into .dsbra/hadoop/<version>; idempotent.
# 3.5.0 (Jersey 2 REST) is for the integration test that runs the collector on it.
hadoop: $(VENV)/.installed
	@$(DSBRA) cluster install
	@$(DSBRA) cluster install --version 3.5.0

# Apache Spark from PyPI (pyspark) into its own virtual environment, .dsbra/spark/<version>, for
# `dsbra cluster up --spark` and its tests; idempotent (pip caches the download). Not the demo's.
spark: $(VENV)/.installed
	@$(DSBRA) cluster install --spark

# dsbra's NameNode placement plugin (placement/, Hadoop "provided") for each Hadoop version the
# bundled cluster runs: .dsbra/placement/<version>/dsbra-placement.jar; Maven skips what is built
HADOOP_VERSIONS := 3.4.2 3.5.0
MVN_PLACEMENT   = mvn -B -q -f placement/pom.xml $${DSBRA_MAVEN_REPO:+-Ddsbra.maven.repo=$$DSBRA_MAVEN_REPO}
placement: | system-deps
	@for v in $(HADOOP_VERSIONS); do $(MVN_PLACEMENT) -Dhadoop.version=$$v -DskipTests package || exit 1; done

# its JUnit tests (Maven Surefire) against each version
placement-test: placement
	@for v in $(HADOOP_VERSIONS); do echo "placement plugin JUnit, Hadoop $$v"; \
	  $(MVN_PLACEMENT) -Dhadoop.version=$$v test || exit 1; done

# the Hive jars from Maven Central (hive/pom.xml) into .dsbra/hive/<version>: the HiveServer2 of
# `dsbra bench replay --engine hive` and its integration test; idempotent. Not needed by the demo.
hive: $(VENV)/.installed
	@$(DSBRA) bench hive install

$(VENV)/.installed: pyproject.toml | system-deps
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# Docker engine, debootstrap and the Compose v2 plugin for hadoop-docker/ and its tests
# (pytest -m docker); installed/started/built only if missing, see the script
docker-deps:
	@bash hadoop-docker/setup-engine.sh

# the status page's browser test (Debian's Chromium and ChromeDriver, driven by Selenium) and
# the alert rules' check (promtool, in Debian's prometheus package); installed only if missing
ui-deps:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null && command -v promtool >/dev/null \
	  || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	      chromium chromium-driver prometheus)

unit: setup ui-deps
	$(PY) -m pytest tests/unit -n auto

# every test, the demo's (tests/integration/test_demo.py) and the Kerberized TLS and HA
# clusters' included: CI (.ci/run) runs this and must end within 60 minutes on 2 cores. The unit
# tests run on every core (pytest-xdist; they share no cluster), the cluster tests one at a time. The
# Docker engine's set-up (mostly building the Compose plugin, on a fresh machine) runs beside
# the rest of the set-up (downloads, mostly), once the Debian packages are in (one apt at a time)
test: system-deps ui-deps
	@mkdir -p .dsbra; bash hadoop-docker/setup-engine.sh >.dsbra/docker-deps.log 2>&1 & engine=$$!; \
	  $(MAKE) --no-print-directory setup hive spark placement-test; rc=$$?; \
	  wait $$engine; cat .dsbra/docker-deps.log; exit $$rc
	$(PY) -m pytest tests/unit -n auto --durations=10
	$(PY) -m pytest tests/integration --durations=40

# only the tests against `dsbra cluster up --kerberos --tls`, `--tls` and `--ha`
test-production: setup
	$(PY) -m pytest --durations=20 -m "secure or ha"

# the whole loop: hot-file jobs, the daemon raises the file, later jobs local, lowered back
demo: setup
	$(PY) -m dsbra.demo

clean:
	rm -rf $(VENV) build *.egg-info
