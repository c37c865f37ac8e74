"""Content hashing: SHA-256 hex digests of text, bytes and JSON-able values.

Ids and cache keys in unified-kg-rag are SHA-256 only (DESIGN.md §4). Stable JSON
(sorted keys, no whitespace, UTF-8) makes a structured value hash the same in any process.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

__all__ = ["sha256_bytes", "sha256_file", "sha256_json", "sha256_text", "stable_json"]


def sha256_bytes(data: bytes) -> str:
    """Return the SHA-256 hex digest (64 lowercase hex characters) of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(*parts: str) -> str:
    """Return the SHA-256 hex digest of ``parts`` encoded as UTF-8 and joined by NUL bytes.

    Joining with NUL keeps ``("ab", "c")`` and ``("a", "bc")`` distinct.
    """
    h = hashlib.sha256()
    for i, part in enumerate(parts):
        if i:
            h.update(b"\x00")
        h.update(part.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def stable_json(value: object) -> str:
    """Return ``value`` as compact JSON with sorted keys (the same text in any process)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_json(value: object) -> str:
    """Return the SHA-256 hex digest of ``stable_json(value)``."""
    return sha256_text(stable_json(value))


def sha256_file(chunks: Iterable[bytes]) -> str:
    """Return the SHA-256 hex digest of a stream of byte chunks (a file read in blocks)."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()
