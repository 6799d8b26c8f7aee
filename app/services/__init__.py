"""The rules: prefix scoping, append concurrency, idempotency, limits. Services commit."""
