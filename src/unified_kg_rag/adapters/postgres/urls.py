"""Connection URLs as users type them: where they point, without the password.

`masked_location` names a server in messages and ``ukr status``; `scrub` removes a password
from any message a driver wrote (psycopg quotes the connection string it could not parse).
Both work on input that is not a valid URL, since that is when messages are written.
"""

from __future__ import annotations

import re

import psycopg
from psycopg.conninfo import conninfo_to_dict

__all__ = ["masked_location", "scrub"]

_URL = re.compile(r"^\s*(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$", re.S)
_URL_USERINFO = re.compile(r"(://[^:/@\s]*):[^\s]*@")
_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.I)


def masked_location(url: str) -> str:
    """Return where ``url`` points as ``scheme://user@host:port/dbname``, without the password.

    Works on what users type even when it is not a valid URL (a password with ``/`` or ``@``
    in it, a SQLAlchemy ``postgresql+psycopg://`` URL): everything before the last ``@`` but
    the user name, and every query parameter, are left out. A ``key=value`` connection string
    shows its host, port, user and database. The password never appears.
    """
    match = _URL.match(url)
    if match is not None:
        rest = match["rest"]
        user = ""
        if "@" in rest:
            userinfo, rest = rest.rsplit("@", 1)
            user = userinfo.split(":", 1)[0].split("?", 1)[0] + "@"
        return f"{match['scheme']}://{user}{rest.split('?', 1)[0]}"
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return "postgresql://(unparsable connection string)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = str(parts.get("host") or "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname') or ''}"


def scrub(text: str, url: str) -> str:
    """Return ``text`` (an error message) with any password of ``url`` replaced by ``***``."""
    secrets: list[str] = []
    match = _URL.match(url)
    if match is not None and "@" in match["rest"]:
        userinfo = match["rest"].rsplit("@", 1)[0]
        if ":" in userinfo:
            secrets.append(userinfo.split(":", 1)[1])
    try:
        password = conninfo_to_dict(url).get("password")
        if password:
            secrets.append(str(password))
    except psycopg.Error:
        pass
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    text = _URL_USERINFO.sub(r"\1:***@", text)
    return _KEYWORD_PASSWORD.sub(r"\1***", text)
