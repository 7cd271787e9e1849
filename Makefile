# One command each: `make demo` (install, then type into a file with the embedded model)
# and `make test` (install, then run the test suite). Both start from a bare machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --editable '.[local,dev]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/lsp-spark demo --backend local

test: install
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy lsp_spark

bench: install
	$(BIN)/python benchmarks/bench_documents.py
	$(BIN)/python benchmarks/bench_syntax.py
	$(BIN)/python benchmarks/bench_context.py
	$(BIN)/python benchmarks/holes.py
	$(BIN)/python benchmarks/replay.py
