"""Shared pytest configuration.

Its presence in the ``tests`` package makes pytest put the repository root on ``sys.path``
before collection, so test modules can import ``tests.support`` and ``tests.fakes`` at
module level whichever subset of the suite runs. It also loads the shared fixtures of
``tests/support/fixtures.py`` (``openai_server``: a real OpenAI-compatible HTTP server).
"""

pytest_plugins = ["tests.support.fixtures"]
