"""What routes share: the application of the running server."""

from __future__ import annotations

from fastapi import Request

from unified_kg_rag.bootstrap import App

__all__ = ["app_of"]


def app_of(request: Request) -> App:
    """The `App` the server built at start (one per process)."""
    app: App = request.app.state.ukr
    return app
