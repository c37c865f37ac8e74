"""What routes share: the application of the running server and its jobs."""

from __future__ import annotations

from fastapi import Request

from unified_kg_rag.bootstrap import App
from unified_kg_rag.service.jobs import JobManager

__all__ = ["app_of", "jobs_of"]


def app_of(request: Request) -> App:
    """The `App` the server built at start (one per process)."""
    app: App = request.app.state.ukr
    return app


def jobs_of(request: Request) -> JobManager:
    """The `JobManager` of this server process."""
    jobs: JobManager = request.app.state.jobs
    return jobs
