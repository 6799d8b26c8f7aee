"""Benchmarks of Sessionary against google-adk's DatabaseSessionService and a SQL floor."""
