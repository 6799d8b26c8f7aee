import os

# The cluster suite (`make test` runs it after the single-node one): the tests' databases are
# made on a Citus cluster (tests/fixtures.py).
ON_CITUS = os.environ.get("SESSIONARY_TEST_CITUS") == "1"
