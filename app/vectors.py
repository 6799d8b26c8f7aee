"""pgvector, where the database has it: the extension and the HNSW indexes of memories'
vectors, which `sessionary migrate` makes (every time it runs, so that a server that gains
pgvector later gains them at its next migrate), and what a running app asks of it.

The vectors are `real[]` (migration 0024); an index is built on their cast to pgvector's type,
one per size of vector, as HNSW needs to know it: the sizes of the common embedding models
below. A model of another size is recalled by an exact scan of the user's vectors, still by
meaning. Without pgvector, memories are recalled by words alone, and every answer says so.
"""

import logging

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from app.sharding import one_shard_at_a_time

logger = logging.getLogger(__name__)

# The sizes that get an HNSW index: WordLlama's default (256), MiniLM and bge-small (384),
# 512, nomic and bge-base and Gemini's (768), 1024, OpenAI's text-embedding-3-small (1536).
# pgvector indexes up to 2,000 dimensions of its `vector`.
INDEXED_DIMENSIONS = (256, 384, 512, 768, 1024, 1536)

VERSION = "SELECT extversion FROM pg_extension WHERE extname = 'vector'"


def index_name(dimensions: int) -> str:
    return f"ix_memory_vectors_hnsw_{dimensions}"


def in_the_models(item: object, name: str | None, kind: str, *_: object) -> bool:
    """Alembic's `include_object`: what `app.models` describes, which the HNSW indexes are
    not (made here, where pgvector is)."""
    return not (kind == "index" and (name or "").startswith("ix_memory_vectors_hnsw_"))


def as_vector(column: str, dimensions: int) -> str:
    """The expression the index of `dimensions` is built on: a statement must use it as is."""
    return f"({column}::vector({dimensions}))"


def enable(connection: Connection) -> str | None:
    """Create the extension where the server has it and this role may, then the indexes that
    are missing; pgvector's version, or None when memories will be recalled by words alone."""
    if connection.scalar(text("SELECT to_regclass('memory_vectors')")) is None:
        return None  # an upgrade to a revision before memories
    # On Citus, an index made on every shard at once would leave the transaction unable to
    # make the functions `sharding.distribute` makes after.
    one_shard_at_a_time(connection)
    version = connection.scalar(text(VERSION))
    if version is None:
        available = connection.scalar(
            text("SELECT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'vector')")
        )
        if not available:
            logger.warning(
                "pgvector is not installed on this PostgreSQL: memories are recalled by words "
                "alone. Install it (PGDG's postgresql-NN-pgvector, or an image with it) and "
                "run `sessionary migrate` again to recall by meaning."
            )
            return None
        try:
            with connection.begin_nested():
                connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        except DBAPIError as error:  # a role that may not: words alone, and says why
            logger.warning(
                "Could not create the extension pgvector (%s): memories are recalled by words "
                "alone. Have a superuser run `CREATE EXTENSION vector`, then `sessionary "
                "migrate` again.",
                error,
            )
            return None
        version = connection.scalar(text(VERSION))
    for dimensions in INDEXED_DIMENSIONS:
        connection.execute(
            text(
                f"CREATE INDEX IF NOT EXISTS {index_name(dimensions)} ON memory_vectors "
                f"USING hnsw ({as_vector('embedding', dimensions)} vector_cosine_ops) "
                f"WHERE cardinality(embedding) = {dimensions}"
            )
        )
    return str(version)
