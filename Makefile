# agentmem developer commands. Each target creates .venv at the repo root when missing and
# installs the project with every extra, so `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-fast lint format generate bench eval clean

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

test: lint
	$(BIN)/python -m pytest -q

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
