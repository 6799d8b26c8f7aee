"""All SQL of the service. Functions take the connection of the caller's unit of work
(SQLAlchemy Core, `db`) and never commit."""
