"""Cross-site request forgery and DNS-rebinding guards, and ``nosniff`` on every reply.

A server without API keys (the local default) trusts whoever reaches it. Two ways a web page
the user merely visits could reach it through their browser:

- *cross-site requests*: a page on another origin posts a multipart form or a bodiless POST
  to ``http://127.0.0.1:8420/v1/...`` (no CORS preflight is needed for those) and uploads,
  deletes or resets. Refused: a request with an unsafe method (POST, PUT, PATCH, DELETE)
  whose ``Origin`` is neither this server's own (the ``Host`` it was addressed to) nor one of
  ``service.cors_origins`` answers 403 ``CrossSiteRequestRefused``, keys or not; without an
  ``Origin``, a ``Sec-Fetch-Site: cross-site`` says the same. Clients that are not browsers
  (curl, SDKs, the MCP bridge) send neither header and are not affected.
- *DNS rebinding*: a host name of the attacker's made to resolve to 127.0.0.1, so the page is
  same-origin with the server and can read its answers. Refused: while no API key is
  required, a request whose ``Host`` is not a loopback name (``localhost``, 127.0.0.0/8,
  ``::1``) or one of ``service.allowed_hosts`` answers 403 ``HostNotAllowed``. ``ukr serve
  --insecure`` on another address turns this check off (it already answers anyone).

Every reply also carries ``X-Content-Type-Options: nosniff``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders, State
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from unified_kg_rag.service.errors import ServiceError, send_error
from unified_kg_rag.service.keys import KeyRing

__all__ = ["OriginGuardMiddleware", "is_loopback_host"]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` (and ``*.localhost``) and loopback addresses (127.0.0.0/8, ::1).

    Args:
        host: a host name or address, without port; an IPv6 address with or without brackets.
    """
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(host_header: str) -> str:
    """The host name of a ``Host`` header value (``[::1]:8420`` -> ``::1``).

    "" for a value no client sends (userinfo, a list, a path, spaces), so it is never taken
    for a loopback name.
    """
    if any(c in host_header for c in "@,/\\ \t"):
        return ""
    try:
        return (urlsplit(f"//{host_header}").hostname or "").lower()
    except ValueError:  # an invalid IPv6 literal
        return ""


class OriginGuardMiddleware:
    """The ASGI middleware of the module docstring.

    Args:
        app: the application it guards.
        keys: the live key ring: the Host check applies while no key is required.
        allowed_hosts: host names answered besides loopback ones (``service.allowed_hosts``;
            ``*`` answers any).
        cors_origins: origins allowed to send unsafe requests (``service.cors_origins``).
        state: the app's state, read at each request: ``state.any_host`` true answers any
            ``Host`` (``ukr serve --insecure`` on a non-loopback address sets it).
    """

    def __init__(
        self, app: ASGIApp, *, keys: KeyRing, allowed_hosts: Sequence[str],
        cors_origins: Sequence[str], state: State,
    ) -> None:  # fmt: skip
        self.app = app
        self.keys = keys
        self.allowed_hosts = {h.lower() for h in allowed_hosts}
        self.cors_origins = {o.rstrip("/") for o in cors_origins}
        self.state = state
        self.any_name = "*" in self.allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a cross-site or rebound request; add ``nosniff`` to every reply."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            self._check(scope, headers)
        except ServiceError as error:
            await send_error(scope, receive, send, error)
            return

        async def nosniff_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).setdefault("X-Content-Type-Options", "nosniff")
            await send(message)

        await self.app(scope, receive, nosniff_send)

    def _check(self, scope: Scope, headers: Headers) -> None:
        host_header = headers.get("host", "")
        host = _host_name(host_header)
        any_host = self.any_name or getattr(self.state, "any_host", False)
        if not any_host and not self.keys.required and not (
                is_loopback_host(host) or host in self.allowed_hosts):  # fmt: skip
            raise ServiceError(
                403, "HostNotAllowed",
                f"this server has no API keys and answers only requests addressed to a "
                f"loopback name, not {host_header!r} (a page of another site may be "
                "reaching it through your browser); add API keys (`ukr keys add`) or name "
                "the host in service.allowed_hosts", field="Host",
            )  # fmt: skip
        if scope["method"] in SAFE_METHODS:
            return
        origin = headers.get("origin")
        if origin is None:
            if headers.get("sec-fetch-site", "").lower() == "cross-site":
                raise ServiceError(403, "CrossSiteRequestRefused",
                                   "a page of another site may not change this server's "
                                   "indexes", field="Origin")  # fmt: skip
            return
        own = f"{scope.get('scheme', 'http')}://{host_header}".lower()
        if origin.rstrip("/").lower() == own or origin.rstrip("/") in self.cors_origins:
            return
        raise ServiceError(
            403, "CrossSiteRequestRefused",
            f"a page of {origin!r} may not send {scope['method']} requests to this server "
            "(list its origin in service.cors_origins to allow it)", field="Origin",
        )  # fmt: skip
