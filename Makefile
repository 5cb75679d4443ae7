# rdbspec — every target installs what it needs itself. `run` needs Python 3.10+ and Java 17+
# only (a .venv with rdbspec and its spark extra); the test targets add the dev extra, npm
# packages into tests/conformance and Debian's redis-server (when root and missing).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed
PEERS := ../shared/corpus/peers
NODE_STAMP := tests/conformance/node_modules/.installed
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: setup run test test-peers regenerate check-generated lint conformance pytest bench redis-server

$(RUN_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || \
	  { echo "Python 3.10+ is needed (PYTHON=$(PYTHON) is $$($(PYTHON) --version 2>&1))"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[spark]'
	touch $@

$(STAMP): $(RUN_STAMP)
	$(PY) -m pip install -q -e '.[dev,spark]'
	touch $@

$(NODE_STAMP): tests/conformance/package.json tests/conformance/package-lock.json
	npm ci --prefix tests/conformance --no-audit --no-fund --loglevel=error
	touch $@

redis-server:
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	  else echo "redis-server missing and not root: real-server tests will be skipped"; fi; \
	fi

setup: $(STAMP) $(NODE_STAMP) redis-server

# The main job on the bundled sample dumps, through Spark local mode (checks Java 17+ first).
run: $(RUN_STAMP)
	$(PY) -m rdbspec pipeline examples/ --out out/examples --master 'local[*]'

regenerate: $(STAMP)
	$(PY) -m generator spec generated docs/spec

# generated/ and docs/spec/ must be exactly what the generator makes from spec/ + generator/.
check-generated: $(STAMP)
	rm -rf build/regen && $(PY) -m generator spec build/regen/generated build/regen/docs >/dev/null
	diff -r -x __pycache__ -x "*.c" -x "*.so" build/regen/generated generated
	diff -r build/regen/docs docs/spec
	@echo "generated/ is up to date"

lint: $(STAMP)
	$(VENV)/bin/ruff check .

conformance: $(STAMP) $(NODE_STAMP)
	$(PY) tests/conformance/run.py

pytest: setup
	$(PY) -m pytest -q

test: setup check-generated lint conformance pytest

# The dumps other projects publish, never copied into the repository: read from ../shared.
test-peers: $(STAMP)
	@test -d $(PEERS) || { echo "make test-peers: $(PEERS) is absent (the peers' published dumps are kept \
	outside the repository; put that directory beside the clone to run these tests)"; exit 1; }
	$(PY) -m pytest -q -m peers tests/test_peers.py

bench: setup
	$(PY) -m bench
