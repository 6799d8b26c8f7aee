"""HTTP routes: thin handlers that parse, call one service method, and return its result."""
