# rdbspec — every target installs what it needs itself. `run` needs Python 3.10+ and Java 17+
# only (a .venv with rdbspec and its spark extra); the test targets add the dev and connect extras, npm
# packages into tests/conformance and Debian's redis-server and chromium (when root and missing). A C compiler
# and the Python headers are optional: the install compiles the native backend with them
# (setup.py) and uses the pure-Python parsers without.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.created
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed
PEERS := ../shared/corpus/peers
NODE_STAMP := tests/conformance/node_modules/.installed
NATIVE_STAMP := $(VENV)/.installed-native
# The modules byte-compiled as a wheel's install does (pip compiles them; an editable install and
# PYTHONDONTWRITEBYTECODE would leave each command compiling them again on every start)
BYTECODE = $(PY) -m compileall -q -j 0 rdbspec generated
NATIVE_SOURCES := $(wildcard generated/native/*.pyx generated/native/*.pxd) $(shell find rdbspec -name '*.pyx' -o -name '*.pxd' -o -name '*.h')
ASAN := build/asan
# gcc's sanitizer runtimes, preloaded into the (uninstrumented) Python that loads the ASan build
SANITIZER_LIBS = $(shell gcc -print-file-name=libasan.so) $(shell gcc -print-file-name=libubsan.so)
ASAN_ENV = LD_PRELOAD='$(SANITIZER_LIBS)' ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 PYTHONPATH=$(ASAN)/lib RDBSPEC_BACKEND=native \
  RDBSPEC_TEST_BACKENDS=native
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: setup run test test-asan test-peers test-large regenerate check-generated lint conformance pytest bench \
  debian-packages fuzz fuzz-build

$(VENV_STAMP):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || \
	  { echo "Python 3.10+ is needed (PYTHON=$(PYTHON) is $$($(PYTHON) --version 2>&1))"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	touch $@

# Each install compiles the native backend in place (setup.py), so the test install, which has
# the spark extra too, stands for the run one: one compile per fresh checkout.
$(RUN_STAMP): pyproject.toml | $(VENV_STAMP)
	$(PY) -m pip install -q -e '.[spark]'
	@$(BYTECODE)
	@$(PY) -m rdbspec --version
	touch $(NATIVE_STAMP) $@

$(STAMP): pyproject.toml | $(VENV_STAMP)
	$(PY) -m pip install -q -e '.[dev,spark,connect]'
	@$(BYTECODE)
	@$(PY) -m rdbspec --version
	touch $(NATIVE_STAMP) $(RUN_STAMP) $@

# A changed .pyx (make regenerate) or setup.py builds the native backend again.
$(NATIVE_STAMP): setup.py $(NATIVE_SOURCES) | $(VENV_STAMP)
	$(PY) -m pip install -q --no-deps -e .
	@$(BYTECODE)
	@$(PY) -m rdbspec --version
	touch $@

$(NODE_STAMP): tests/conformance/package.json tests/conformance/package-lock.json
	npm ci --prefix tests/conformance --no-audit --no-fund --loglevel=error
	touch $@

# Debian's redis-server (the real-server tests) and chromium (tests/servers/test_report.py renders the
# report page headless), installed with one apt-get update when root and missing.
debian-packages:
	@missing=""; for p in redis-server chromium; do command -v $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing and not root:$$missing (real-server tests are skipped; tests/servers/test_report.py fails without chromium)"; fi; \
	fi

setup: $(STAMP) $(NATIVE_STAMP) $(NODE_STAMP) debian-packages

# The main job on the bundled sample dumps, through Spark local mode (checks Java 17+ first).
run: $(RUN_STAMP) $(NATIVE_STAMP)
	$(PY) -m rdbspec pipeline examples/ --out out/examples --master 'local[*]' --report out/examples/report.html

regenerate: $(STAMP)
	$(PY) -m generator spec generated docs/spec

# generated/ and docs/spec/ must be exactly what the generator makes from spec/ + generator/.
check-generated: $(STAMP)
	rm -rf build/regen && $(PY) -m generator spec build/regen/generated build/regen/docs >/dev/null
	diff -r -x __pycache__ -x '*.c' -x '*.so' -x '*.html' build/regen/generated generated
	diff -r build/regen/docs docs/spec
	@echo "generated/ is up to date"

# ruff, then mypy (its settings: pyproject.toml); mypy finds rdbspec_generated through the link
# that setup.py makes for Cython (build/cython-include), made here too when it is missing
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	@test -L build/cython-include/rdbspec_generated || \
	  { mkdir -p build/cython-include && ln -s "$(abspath generated)" build/cython-include/rdbspec_generated; }
	$(PY) -m mypy

conformance: $(STAMP) $(NODE_STAMP)
	$(PY) tests/conformance/run.py

# Two processes, each taking whole test files (a file's servers and Spark session started once):
# most tests wait on servers, Spark or subprocesses, so two overlap even on 2 cores.
pytest: setup
	$(PY) -m pytest -q -n 2 --dist loadfile

test: setup check-generated lint conformance pytest test-asan

# The native backend built again with AddressSanitizer and UndefinedBehaviorSanitizer into
# build/asan (never the install), then the golden fixtures (conformance's ours-native), the corpus,
# the seeded fuzz run, the crashes the coverage-guided fuzzing found (tests/fuzz/crashes/), the
# chunked readers of hashtable-encoded values (tests/unit/test_chunks.py), both JSON writers, the
# compiled one's float printer (tests/unit/test_shortest_double.py) and the mapped pages' releasing
# thread through it, the RESTORE commands built in C (rdbspec itself imported from build/asan too,
# so its compiled JSON encoder, stream ID check, releaser and RESTORE builder are the instrumented ones;
# -P and pythonpath keep the source tree's out):
# any report aborts the run (CPython's own leaks are by design, so leak detection is off).
test-asan: $(STAMP) $(NATIVE_STAMP)
	rm -rf $(ASAN)
	RDBSPEC_REQUIRE_NATIVE=1 CFLAGS='-fsanitize=address,undefined -fno-omit-frame-pointer -O1 -g1' \
	  LDFLAGS='-fsanitize=address,undefined' \
	  $(PY) setup.py -q build --force --build-base $(ASAN) --build-lib $(ASAN)/lib >/dev/null
	$(ASAN_ENV) $(PY) -P -c 'import rdbspec_generated.native.rdb as m, rdbspec.jsonl._encode as j, rdbspec.read._page_releaser as r, \
	  rdbspec.read._stream_ids as s, rdbspec.restore._restore_commands as c; \
	  assert all(x.__file__.startswith("$(abspath $(ASAN))") and b"__asan_report" in open(x.__file__, "rb").read() \
	             for x in (m, j, r, s, c)), (m.__file__, j.__file__, r.__file__, s.__file__, c.__file__)'
	$(ASAN_ENV) $(PY) tests/conformance/run.py --only ours-native
	$(ASAN_ENV) $(PY) -m pytest -q -rP -p no:cacheprovider -o pythonpath='$(ASAN)/lib .' \
	  tests/corpus/test_corpus.py tests/unit/test_fuzz.py tests/servers/test_jsonl.py tests/unit/test_shortest_double.py tests/unit/test_source.py \
	  tests/unit/test_chunks.py tests/unit/test_restore_payloads.py tests/unit/test_fuzz_crashes.py

# Coverage-guided fuzzing with atheris (tests/fuzz/run.py): each target (the read walk, the write round
# trip) with each backend for FUZZ_S seconds, the native one built into build/fuzz as test-asan builds
# it (ASan, UBSan) plus gcc's coverage callbacks (-fsanitize-coverage=trace-pc,trace-cmp, which
# tests/fuzz/native_coverage.c hands to libFuzzer); then each target's corpus (tests/fuzz/corpus/) is
# merged down to what keeps its coverage. A crash is kept in tests/fuzz/crashes/ and fails the run;
# every run adds its figures to tests/fuzz/runs.tsv. The build is incremental: only what changed.
FUZZ_S ?= 60
FUZZ := build/fuzz
fuzz-build: $(STAMP) $(NATIVE_STAMP)
	RDBSPEC_REQUIRE_NATIVE=1 LDFLAGS='-fsanitize=address,undefined' \
	  CFLAGS='-fsanitize=address,undefined -fsanitize-coverage=trace-pc,trace-cmp -fno-omit-frame-pointer -O1 -g1' \
	  $(PY) setup.py -q build --build-base $(FUZZ) --build-lib $(FUZZ)/lib >/dev/null
	gcc -O2 -Wall -shared -fPIC -o $(FUZZ)/native_coverage.so tests/fuzz/native_coverage.c -ldl

fuzz: fuzz-build
	@status=0; for target in read write; do \
	  for backend in python native; do \
	    $(PY) -m tests.fuzz.run fuzz --target $$target --backend $$backend --seconds $(FUZZ_S) || status=1; \
	  done; \
	  $(PY) -m tests.fuzz.run merge --target $$target || status=1; \
	done; $(PY) -m tests.fuzz.run totals; exit $$status

# The dumps other projects publish, never copied into the repository: read from ../shared.
test-peers: $(STAMP)
	@test -d $(PEERS) || { echo "make test-peers: $(PEERS) is absent (the peers' published dumps are kept \
	outside the repository; put that directory beside the clone to run these tests)"; exit 1; }
	$(PY) -m pytest -q -m peers tests/peers/test_peers.py

bench: setup
	$(PY) -m bench

# A 5 GiB dump written by Debian's redis-server through every command and Spark, each answer checked
# against the server's and each process's peak RSS against 300 MB (bench/large.py): ~25 GB of disk,
# ~8 GB of RAM, ~20 minutes; bench/results/large.md. Not part of make test.
test-large: setup
	$(PY) -m bench.large
