"""The database and server fixtures, shared by the service's and the client's tests."""

from tests import ON_CITUS

pytest_plugins = ["tests.fixtures"]

# What only a Citus cluster can show runs in the cluster suite alone (`make test` runs both).
collect_ignore = [] if ON_CITUS else ["tests/test_citus.py"]
