"""The database and server fixtures, shared by the service's and the client's tests."""

pytest_plugins = ["tests.fixtures"]
