"""Who may call the API: API keys with scopes ``read``, ``write`` and ``admin``.

`requires` is the dependency every route names with the scope it needs: ``read`` for
questions, listings and ``/metrics``, ``write`` for index jobs and deletions, ``admin`` for
resets and key management. A key comes as ``Authorization: Bearer KEY`` or ``X-API-Key:
KEY``. A service whose key ring never held a key (`keys.KeyRing.required`) lets every call
through; otherwise a call without a known key is refused 401 (``WWW-Authenticate: Bearer``)
and a key lacking the scope 403. Health, version and the OpenAPI pages (``/docs``,
``/openapi.json``: the API's shape, no data) name no scope and stay open.

The outcome is kept on the ASGI scope (``KEY_NAME_SCOPE``: the key's name, for the access
log), so a request is matched once however many checks ask.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Request, Security
from fastapi.security import APIKeyHeader, HTTPBearer
from starlette.datastructures import Headers
from starlette.types import Scope as AsgiScope

from unified_kg_rag.service.errors import ServiceError
from unified_kg_rag.service.keys import ApiKey, KeyRing, Scope, grants

__all__ = ["KEY_NAME_SCOPE", "Scope", "authenticate", "authorize", "presented_key", "requires"]

KEY_NAME_SCOPE = "ukr.key_name"
"""The ASGI scope entry holding the name of the key a request was admitted with."""

_MATCHED = "ukr.api_key"
_BEARER = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer KEY`.")
_HEADER = APIKeyHeader(name="X-API-Key", auto_error=False, description="An API key.")
_BEARER_DEPENDENCY = Security(_BEARER)
_HEADER_DEPENDENCY = Security(_HEADER)
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def presented_key(headers: Headers) -> str | None:
    """The key a request presents: ``Authorization: Bearer KEY``, else ``X-API-Key``."""
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return headers.get("x-api-key", "").strip() or None


def authenticate(scope: AsgiScope) -> ApiKey | None:
    """The key an HTTP request was made with; None when the service needs no key.

    Args:
        scope: the request's ASGI scope (its ``app`` holds the key ring as
            ``state.keys``; an app without one needs no key).

    Raises:
        ServiceError: 401 ``AuthenticationError``: keys are required and the request has
            none, or one no stored key matches (the key is never repeated).
    """
    if _MATCHED in scope:
        found: ApiKey | None = scope[_MATCHED]
        return found
    ring: KeyRing | None = getattr(scope["app"].state, "keys", None)
    found = None
    if ring is not None and ring.required:
        key = presented_key(Headers(scope=scope))
        if key is None:
            raise ServiceError(401, "AuthenticationError", "an API key is required: send "
                               "'Authorization: Bearer KEY' or 'X-API-Key: KEY'",
                               headers=_CHALLENGE)  # fmt: skip
        found = ring.match(key)
        if found is None:
            raise ServiceError(401, "AuthenticationError", "the API key is not valid",
                               headers=_CHALLENGE)  # fmt: skip
        scope[KEY_NAME_SCOPE] = found.name
    scope[_MATCHED] = found
    return found


def authorize(scope: AsgiScope, needed: Scope) -> None:
    """Admit an HTTP request whose key holds ``needed`` (or any, when no key is needed).

    Raises:
        ServiceError: 401 (`authenticate`), or 403 ``PermissionDenied``: the key lacks
            ``needed``.
    """
    key = authenticate(scope)
    if key is not None and not grants(key.scopes, needed):
        raise ServiceError(403, "PermissionDenied", f"the key {key.name!r} does not hold "
                           f"the {needed!r} scope (it holds: {', '.join(key.scopes)})")  # fmt: skip


def requires(scope: Scope) -> Callable[..., Awaitable[None]]:
    """Return a FastAPI dependency that admits a request whose key holds ``scope``.

    Use as ``dependencies=[Depends(requires("read"))]``. The dependency also declares both
    ways of sending a key in the OpenAPI schema, so ``/docs`` offers them.

    Raises:
        ServiceError: 401 or 403, answered as a typed JSON error (`authorize`).
    """

    async def check(
        request: Request,
        _bearer: Any = _BEARER_DEPENDENCY,  # declared for the OpenAPI schema; read below
        _header: Any = _HEADER_DEPENDENCY,
    ) -> None:
        authorize(request.scope, scope)

    check.__name__ = f"requires_{scope}"
    return check
