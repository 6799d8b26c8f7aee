"""All SQL of the service. Functions take the asyncpg connection of the caller's unit of work
(`connection`) and never commit.

Statements are written in SQLAlchemy Core, or as text where PostgreSQL's own syntax says it
better (the append's CTE). They run one of two ways, both on that connection:

- `app.db.fetch` and its kin, the default: a Core statement built for the call (listing
  filters, keyset positions, everything off the hot path), compiled once per shape;
- `DriverStatement`: the append and the session read, which every agent turn makes, compiled
  once at import with named parameters and sent as they are. A statement earns this only
  when a benchmark shows it (bench/README.md).

A statement's rows are mapped to domain values in one place (`sessions.stored_session` reads
the rows of either way).
"""
