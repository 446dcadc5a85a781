# agentmem developer commands. Each target creates .venv at the repo root when missing and
# installs the project with every extra, so `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-fast lint browser format generate bench eval clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# the project was once installed here as `agentmem` (now agentmem-layer: PyPI's agentmem is
	# another project); drop that copy first, or both would claim the packages and the command
	$(BIN)/python -m pip uninstall --quiet --yes agentmem 2>/dev/null || true
	$(BIN)/python -m pip install --quiet -e ".[all,dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/agentmem demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint browser
	$(BIN)/python -m pytest -q

# Chromium and its driver, for the inspector's browser tests: installed with apt-get when they
# are missing and apt-get can run (as root, or through sudo without a password, as on CI
# runners); otherwise those tests skip, saying why. With both present it only looks them up.
# Never fails the build.
browser:
	@if ! { command -v chromium || command -v chromium-browser; } >/dev/null 2>&1 || \
	    ! command -v chromedriver >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; \
	  elif sudo -n true >/dev/null 2>&1; then sudo="sudo -n"; \
	  else sudo=no; fi; \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$sudo" != no ]; then \
	    echo "installing chromium and chromium-driver (apt-get) for the browser tests"; \
	    apt="$$sudo env DEBIAN_FRONTEND=noninteractive apt-get -y -qq"; \
	    $$apt install chromium chromium-driver >/dev/null 2>&1 || \
	    { $$apt update >/dev/null 2>&1 && $$apt install chromium chromium-driver >/dev/null 2>&1; } || \
	    echo "could not install chromium: the inspector's browser tests will skip"; \
	  else \
	    echo "no chromium (apt-get install chromium chromium-driver): the inspector's browser tests will skip"; \
	  fi; \
	fi

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# the clients' generated code: client/_ops_aio.py from the contract (agentmem/protocols.py),
# client/_ops_sync.py and client/sync.py from their async sources (a test fails until rerun)
generate: $(STAMP)
	$(BIN)/python tools/generate_client.py

bench: $(STAMP)
	$(BIN)/agentmem bench --memories 10000

eval: $(STAMP)
	$(BIN)/agentmem eval --dataset golden

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
