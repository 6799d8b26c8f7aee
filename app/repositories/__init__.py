"""All SQL of the service. Functions take the connection of the caller's unit of work (`db`, a
SQLAlchemy Core `AsyncConnection`) and never commit.

Statements are written in SQLAlchemy Core, or as text where PostgreSQL's own syntax says it
better (the append's CTE). They run one of two ways:

- through SQLAlchemy (`db.execute`), the default: statements whose shape depends on the call
  (listing filters, keyset positions) and everything off the hot path;
- through the asyncpg driver (`app.db.driver`, `DriverStatement`): the append and the session
  read, which every agent turn makes. They are compiled once at import and sent as they are,
  skipping SQLAlchemy's execution machinery (a quarter of an append's CPU), on the same pooled
  connection and in the same transaction. A statement earns this only when a benchmark shows it.

A statement's rows are mapped to domain values in one place (`sessions.stored_session` reads
the rows of either way).
"""
