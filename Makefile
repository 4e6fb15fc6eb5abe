# The two commands of the Quickstart: `make plan` and `make test`. Everything else builds on them.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
# Checkov pins boto3 and packaging versions our own set cannot share: it gets a virtualenv of its own.
CHECKOV_VENV ?= .venv-checkov
STACK ?= dev
STACK_FILE ?=
PROGRAM ?=
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` (PYTEST_WORKERS=0 runs in this process, e.g. to debug). More than the
# 2 cores CI has: the live tests mostly wait on servers and stand-ins, and the unit tests fill the cores meanwhile
# (tests/conftest.py; docs/benchmarks.md).
PYTEST_WORKERS ?= 4
BENCH_ARGS ?=

# The stamp depends on every dependency file, so a changed range reinstalls and nothing else does.
$(VENV)/.installed: pyproject.toml requirements.txt requirements-dev.txt requirements-triton.txt
	@test -x $(BIN)/python || { command -v "$(PYTHON)" >/dev/null 2>&1 && "$(PYTHON)" -c "import venv, ensurepip" 2>/dev/null; } || \
	  { echo "make: no Python that can create $(VENV) (PYTHON='$(PYTHON)'): install Python 3.11+ with venv and ensurepip (Debian: apt-get install python3-venv), or set PYTHON=/path/to/python3" >&2; exit 2; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24,<27"
	$(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-triton.txt
	@touch $@

$(CHECKOV_VENV)/.installed: requirements-checkov.txt
	@test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet -r requirements-checkov.txt
	@touch $@

# Debian/Ubuntu packages the live tests run for real (Prometheus + promtool, Open MPI 4.1). Installed with apt where it
# exists; elsewhere the tests that need them skip, saying how to install them (and fail instead when CI=true).
APT_PACKAGES := prometheus openmpi-bin

.PHONY: venv checkov system-deps plan test lint bench serve-local clean
venv: $(VENV)/.installed

# Checkov on every stack's rendered manifests runs inside `make test` (tests/infra/test_checkov_manifests.py).
checkov: $(CHECKOV_VENV)/.installed

system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if ! command -v apt-get >/dev/null; then echo "system-deps: not Debian/Ubuntu; install$$missing yourself"; exit 0; fi; \
	sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	echo "system-deps: apt-get install$$missing"; \
	$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null

# GNU make reports any failed recipe as exit 2, so `make plan` cannot tell violations (1) from a bad config
# (2): the recipe says which, and scripts call `$(BIN)/inferctl plan` for the exit code (README).
plan: venv
	@$(BIN)/inferctl plan $(foreach s,$(STACK),--stack $(s)) $(if $(STACK_FILE),--stack-file $(STACK_FILE)) $(if $(PROGRAM),--program $(PROGRAM)); \
	rc=$$?; case $$rc in \
	  1) echo "make plan: mandatory policy violations (inferctl plan exit 1; make reports 2)" >&2;; \
	  2) echo "make plan: configuration or program error (inferctl plan exit 2)" >&2;; \
	esac; exit $$rc

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: venv checkov system-deps lint
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=15 $(PYTEST_ARGS)

bench: venv
	$(BIN)/python -m bench $(BENCH_ARGS)

# The model behind a real Envoy with TLS and API keys (EDGE=0: Triton alone, plain HTTP). Its files live in
# one stable folder, emptied at each start: the edge's CA is $(SERVE_DIR)/edge/tls/ca.pem (docs/inferctl.md).
EDGE ?= 1
API_KEY_FILE ?= build/serve-local/api-keys.json
SERVE_DIR ?= build/serve-local/run
serve-local: venv
	@mkdir -p $(dir $(API_KEY_FILE))
	@rm -rf $(SERVE_DIR)
	$(BIN)/inferctl serve-local --work-dir $(SERVE_DIR) $(if $(filter 1,$(EDGE)),--edge --api-key-file $(API_KEY_FILE))

clean:
	rm -rf build .pytest_cache .ruff_cache
