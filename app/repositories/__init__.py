"""All SQL of the service. Functions take the AsyncSession, may flush, and never commit."""
