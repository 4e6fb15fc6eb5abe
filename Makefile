# The two commands of the Quickstart: `make plan` and `make test`. Everything else builds on them.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
# Checkov pins boto3 and packaging versions our own set cannot share: it gets a virtualenv of its own.
CHECKOV_VENV ?= .venv-checkov
CLIENTS_VENV ?= .venv-clients
GUIDELLM_VENV ?= .venv-guidellm
STACK ?= dev
STACK_FILE ?=
PROGRAM ?=
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` (PYTEST_WORKERS=0 runs in this process, e.g. to debug). More than the
# 2 cores CI has: the live tests mostly wait on servers and stand-ins, and the unit tests fill the cores meanwhile
# (tests/conftest.py; docs/benchmarks.md).
PYTEST_WORKERS ?= 4
BENCH_ARGS ?=

# Every install comes from a lock (locks/, compiled by `make lock`): exact versions with the hashes of their files,
# installed with --no-deps, so .venv is the same on any day and any machine. The bootstrap lock (pip, setuptools)
# goes first; the project itself last, editable and built with that setuptools (--no-build-isolation: no download).
# It cannot sit in a hashed install: pip refuses an editable requirement in hash-checking mode. `tools.lockfile sync`
# then removes whatever the locks do not pin (a distribution a new lock dropped) and fails if .venv still differs.
# --no-compile: pip would byte-compile every installed module, most of which nothing here imports (pulumi-aws alone
# is tens of thousands of files); Python compiles what is imported on first use. .venv builds in ~40 s instead of
# ~110 s of CPU. (The images keep pip's default: their file systems may be read-only at run time.)
VENV_LOCKS := locks/bootstrap.txt locks/app.txt locks/dev.txt locks/triton.txt
PIP_LOCKED = -m pip install --quiet --require-hashes --no-deps --no-compile
$(VENV)/.installed: $(VENV_LOCKS) pyproject.toml setup.py
	@test -x $(BIN)/python || { command -v "$(PYTHON)" >/dev/null 2>&1 && "$(PYTHON)" -c "import venv, ensurepip" 2>/dev/null; } || \
	  { echo "make: no Python that can create $(VENV) (PYTHON='$(PYTHON)'): install Python 3.11+ with venv and ensurepip (Debian: apt-get install python3-venv), or set PYTHON=/path/to/python3" >&2; exit 2; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python $(PIP_LOCKED) -r locks/bootstrap.txt
	$(BIN)/python $(PIP_LOCKED) $(foreach f,$(filter-out locks/bootstrap.txt,$(VENV_LOCKS)),-r $(f))
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m tools.lockfile sync --venv $(VENV) $(VENV_LOCKS)
	$(BIN)/python tools/namespace_links.py
	@touch $@

CHECKOV_LOCKS := locks/bootstrap.txt locks/checkov.txt
$(CHECKOV_VENV)/.installed: $(CHECKOV_LOCKS) | $(VENV)/.installed
	@test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python $(PIP_LOCKED) -r locks/bootstrap.txt
	$(CHECKOV_VENV)/bin/python $(PIP_LOCKED) -r locks/checkov.txt
	$(BIN)/python -m tools.lockfile sync --venv $(CHECKOV_VENV) $(CHECKOV_LOCKS)
	@touch $@

# The real OpenAI clients the live tests drive through the local edge (aiperf, LangChain, instructor, litellm):
# their own virtualenv, as no resolution holds them beside the project's packages (requirements-clients.txt says why).
CLIENTS_LOCKS := locks/bootstrap.txt locks/clients.txt
$(CLIENTS_VENV)/.installed: $(CLIENTS_LOCKS) | $(VENV)/.installed
	@test -x $(CLIENTS_VENV)/bin/python || $(PYTHON) -m venv $(CLIENTS_VENV)
	$(CLIENTS_VENV)/bin/python $(PIP_LOCKED) -r locks/bootstrap.txt
	$(CLIENTS_VENV)/bin/python $(PIP_LOCKED) -r locks/clients.txt
	$(BIN)/python -m tools.lockfile sync --venv $(CLIENTS_VENV) $(CLIENTS_LOCKS)
	@touch $@

# guidellm, the benchmark client, in a virtualenv of its own: its lock holds one platform, PyTorch's CPU build for
# CPython 3.11 on Linux x86_64 from the machine's wheel directory, which the lock names (requirements-guidellm.txt).
GUIDELLM_LOCKS := locks/bootstrap.txt locks/guidellm.txt
GUIDELLM_PLATFORM := import platform, sys; here = (sys.platform, platform.machine(), sys.version_info[:2]); \
  sys.exit(None if here == ("linux", "x86_64", (3, 11)) else "make guidellm: locks/guidellm.txt holds the CPU build \
  of torch for CPython 3.11 on Linux x86_64 only, not %s (requirements-guidellm.txt): rm -r $(GUIDELLM_VENV), then \
  make guidellm PYTHON=/path/to/python3.11" % (here,))
$(GUIDELLM_VENV)/.installed: $(GUIDELLM_LOCKS) | $(VENV)/.installed
	@test -x $(GUIDELLM_VENV)/bin/python || $(PYTHON) -m venv $(GUIDELLM_VENV)
	@$(GUIDELLM_VENV)/bin/python -c '$(GUIDELLM_PLATFORM)'
	$(GUIDELLM_VENV)/bin/python $(PIP_LOCKED) -r locks/bootstrap.txt
	$(GUIDELLM_VENV)/bin/python $(PIP_LOCKED) -r locks/guidellm.txt
	$(BIN)/python -m tools.lockfile sync --venv $(GUIDELLM_VENV) $(GUIDELLM_LOCKS)
	@touch $@

# Debian/Ubuntu packages the live tests run for real (Prometheus + promtool, Open MPI 4.1). Installed with apt where it
# exists; elsewhere the tests that need them skip, saying how to install them (and fail instead when CI=true).
APT_PACKAGES := prometheus openmpi-bin

.PHONY: venv checkov clients guidellm system-deps plan test lint bench serve-local lock deps-check clean
venv: $(VENV)/.installed

# Checkov on every stack's rendered manifests runs inside `make test` (tests/infra/test_checkov_manifests.py).
checkov: $(CHECKOV_VENV)/.installed

clients: $(CLIENTS_VENV)/.installed

guidellm: $(GUIDELLM_VENV)/.installed

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

# The three tools' virtualenvs are built side by side (each pip run is mostly one core's unpacking and byte-
# compiling: on a clean clone of a 2-core machine the three one after another took about 3 minutes).
test: venv system-deps lint
	@$(MAKE) --no-print-directory -j3 checkov clients guidellm
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=15 $(PYTEST_ARGS)

bench: venv clients
	$(BIN)/python -m bench $(BENCH_ARGS)

# The model behind a real Envoy with TLS and API keys (EDGE=0: the OpenAI server alone, plain HTTP; BATCH=1: the
# Batch API behind the same edge, on moto's S3 and SQS). Its work dir keeps the clients' keys
# ($(SERVE_DIR)/api-keys.json) and the edge's CA ($(SERVE_DIR)/edge/tls/ca.pem) across restarts; it prints the base
# URL, model id, key file and CA when ready (docs/serve-local.md).
EDGE ?= 1
BATCH ?= 0
SERVE_DIR ?= build/serve-local/dev
serve-local: venv
	$(BIN)/inferctl serve-local --work-dir $(SERVE_DIR) $(if $(filter 1,$(EDGE)),--edge) $(if $(filter 1,$(BATCH)),--batch)

# Recompile every lock under locks/ (tools/lock.py) with the uv that locks/dev.txt pins, keeping each existing pin
# its ranges still allow, and print what moved. UPGRADE=1 takes everything to the newest release the ranges allow;
# UPGRADE=botocore,moto only those (and what they force). Then `make venv` installs the new locks.
UPGRADE ?=
comma := ,
lock: venv
	$(BIN)/python -m tools.lock $(if $(filter 1,$(UPGRADE)),--upgrade,$(foreach p,$(subst $(comma), ,$(UPGRADE)),--upgrade-package $(p)))

# What has a newer upstream release than the repository pins: locked distributions (PyPI), Helm charts, container
# images, vendored tables, and which pinned facts to re-read (tools/deps_check). It needs the network, so it is never
# part of `make test`. Exit 0 all current, 1 updates available, 2 some source could not be checked.
DEPS_CHECK_ARGS ?=
deps-check: venv
	$(BIN)/python -m tools.deps_check $(DEPS_CHECK_ARGS)

clean:
	rm -rf build .pytest_cache .ruff_cache
