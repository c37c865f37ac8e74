"""Test support shared by test modules: a real OpenAI-compatible HTTP server and its fixture."""
