"""The service's API keys: the key file `ukr keys` manages, keys from the environment, matching.

A key is a random 256-bit token shown once when it is made; only its SHA-256 is stored, with
its name, scopes and creation time. A hash without a salt is enough for tokens of this
entropy (no dictionary reaches them); keys given in the environment may be weaker, and are
hashed as they are read so no plain key is kept in memory past start.

Scopes nest: ``admin`` includes ``write``, which includes ``read``. What a route needs is
`service.auth.requires`; this module knows nothing of HTTP (the CLI imports it without the
web framework).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from unified_kg_rag.config.load import state_dir
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.util.errors import ConfigurationError, UsageError

__all__ = [
    "DEFAULT_KEYS_FILE",
    "SCOPES",
    "ApiKey",
    "KeyFile",
    "KeyRing",
    "Scope",
    "add_key",
    "dump_keys",
    "env_keys",
    "grants",
    "hash_key",
    "keys_file_path",
    "load_key_ring",
    "read_keys",
    "remove_key",
]

logger = logging.getLogger(__name__)

Scope = Literal["read", "write", "admin"]
"""What a key may do; ``admin`` includes ``write``, which includes ``read``."""

SCOPES: tuple[Scope, ...] = get_args(Scope)
"""The scopes, weakest first."""

DEFAULT_KEYS_FILE = "api_keys.json"
"""The key file's name inside the project's state folder (``.ukr/``)."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_TOKEN_PREFIX = "ukr_"


class ApiKey(BaseModel):
    """One stored key: never the key itself, only its hash.

    Attributes:
        name: who or what holds it (letters, digits, ``.``, ``_``, ``-``; at most 64); it
            names the caller in the access log. Keys from the environment are ``env:N``
            (their position in the variable, from 1).
        scopes: what it may do (`grants`).
        created_at: when it was made, Unix seconds (0 for keys from the environment).
        sha256: the SHA-256 of the key, 64 lowercase hex digits.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    scopes: tuple[Scope, ...]
    created_at: float = 0.0
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class KeyFile(BaseModel):
    """The key file: ``{"version": 1, "keys": [ApiKey, ...]}``."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    keys: list[ApiKey] = Field(default_factory=list)


def hash_key(key: str) -> str:
    """The SHA-256 of ``key`` (UTF-8), 64 lowercase hex digits."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def grants(scopes: tuple[Scope, ...], needed: Scope) -> bool:
    """Whether a key holding ``scopes`` may do what needs ``needed`` (admin ⊇ write ⊇ read)."""
    return any(SCOPES.index(s) >= SCOPES.index(needed) for s in scopes)


def keys_file_path(project_dir: Path, config: UkrConfig) -> Path:
    """The key file of a project.

    Returns:
        ``service.api_keys_file`` (relative to the project), else ``PROJECT/.ukr/api_keys.json``.
    """
    name = config.service.api_keys_file
    return project_dir / name if name else state_dir(project_dir) / DEFAULT_KEYS_FILE


def read_keys(path: Path) -> list[ApiKey]:
    """The keys of a key file; none when it does not exist.

    Raises:
        ConfigurationError: the file cannot be read or is not a key file (naming the file).
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfigurationError(f"cannot read the key file: {exc.strerror}",
                                 source=str(path)) from exc  # fmt: skip
    try:
        return KeyFile.model_validate_json(raw).keys
    except ValidationError as exc:
        raise ConfigurationError("not a key file as `ukr keys add` writes it",
                                 source=str(path)) from exc  # fmt: skip


def _write_keys(path: Path, keys: list[ApiKey]) -> None:
    """Replace the key file atomically (a temporary file, mode 0600, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = KeyFile(keys=keys).model_dump_json(indent=2).encode() + b"\n"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)  # O_CREAT's mode does not apply to a file left by a crash
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def add_key(path: Path, name: str, scope: Scope, *, now: float | None = None) -> str:
    """Make a key named ``name`` with ``scope``, store its hash in ``path``, return the key.

    Returns:
        The key, ``ukr_`` and 43 URL-safe characters (256 random bits); shown once, never
        stored.

    Raises:
        UsageError: the name is not valid, or a key of that name exists.
        ConfigurationError: the key file exists but cannot be read.
    """
    if not _NAME.fullmatch(name):
        raise UsageError("a key name is 1-64 letters, digits, '.', '_' or '-', starting with "
                         "a letter or digit", field="NAME")  # fmt: skip
    keys = read_keys(path)
    if any(k.name == name for k in keys):
        raise UsageError(f"a key named {name!r} exists; remove it first", field="NAME")
    key = _TOKEN_PREFIX + secrets.token_urlsafe(32)
    created = time.time() if now is None else now
    keys.append(ApiKey(name=name, scopes=(scope,), created_at=created, sha256=hash_key(key)))
    _write_keys(path, keys)
    return key


def remove_key(path: Path, name: str) -> None:
    """Remove the key named ``name`` from ``path``.

    Raises:
        UsageError: no key has that name.
        ConfigurationError: the key file cannot be read.
    """
    keys = read_keys(path)
    kept = [k for k in keys if k.name != name]
    if len(kept) == len(keys):
        raise UsageError(f"no key named {name!r}", field="NAME")
    _write_keys(path, kept)


def env_keys(variable: str, environ: Mapping[str, str]) -> list[ApiKey]:
    """The keys of the environment variable ``variable``: ``KEY:SCOPE[+SCOPE]``, by commas.

    Each key is named ``env:N`` by its position (from 1) and hashed at once. Empty entries
    (a trailing comma) are skipped.

    Raises:
        ConfigurationError: an entry is malformed (no ``:``, an empty key, an unknown scope);
            the one-line message names the variable and the entry's position, never the key.
    """
    keys: list[ApiKey] = []
    for position, entry in enumerate(environ.get(variable, "").split(","), start=1):
        if not entry.strip():
            continue
        key, sep, scopes = entry.strip().rpartition(":")
        parts = scopes.split("+")
        if not sep or not key or not all(p in SCOPES for p in parts):
            raise ConfigurationError(
                f"entry {position} is not KEY:SCOPE[+SCOPE] with scopes read, write, admin",
                source=variable,
            )
        scope_set = tuple(s for s in SCOPES if s in parts)
        keys.append(ApiKey(name=f"env:{position}", scopes=scope_set, sha256=hash_key(key)))
    return keys


class KeyRing:
    """The keys a running service accepts.

    Those of the key file (re-read when its size, time or inode changed) and of the
    environment (read once).

    Whether keys are required is sticky: once the ring has held a key, a request without one
    is refused even if every key is later removed (a server bound to a public address must
    not fall open). A ring that never held a key admits everyone.
    """

    def __init__(self, path: Path, env: list[ApiKey]) -> None:
        """Read ``path`` now.

        Raises:
            ConfigurationError: the key file cannot be read or is malformed.
        """
        self.path = path
        self._env = env
        self._stamp = self._stat()
        self._file = read_keys(path)
        self._required = bool(self._file or env)

    @property
    def keys(self) -> tuple[ApiKey, ...]:
        """Every key accepted now (the file is re-read when its size or time changed)."""
        self._reload()
        return (*self._file, *self._env)

    @property
    def required(self) -> bool:
        """Whether a request must carry a key (the ring holds, or has held, one)."""
        self._reload()
        return self._required

    def match(self, key: str) -> ApiKey | None:
        """The stored key ``key`` is, if any.

        Compares the key's hash with every stored hash by `hmac.compare_digest`, without
        stopping at a match, so the time taken does not say which key (or whether one)
        matched.
        """
        digest = hash_key(key)
        found: ApiKey | None = None
        for stored in self.keys:
            if hmac.compare_digest(stored.sha256, digest):
                found = stored
        return found

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _reload(self) -> None:
        stamp = self._stat()
        if stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            self._file = read_keys(self.path)
        except ConfigurationError as exc:  # fail closed: the file's keys stop working
            logger.error("the key file cannot be read; its keys are refused: %s", exc)
            self._file = []
        self._required = self._required or bool(self._file)


def load_key_ring(
    project_dir: Path, config: UkrConfig, environ: Mapping[str, str] | None = None
) -> KeyRing:
    """The keys of a project: its key file and the variable ``service.api_keys_env`` names.

    Args:
        project_dir: the project directory.
        config: its configuration.
        environ: the environment (default: the process's).

    Raises:
        ConfigurationError: the key file or the variable is malformed.
    """
    env = env_keys(config.service.api_keys_env, os.environ if environ is None else environ)
    return KeyRing(keys_file_path(project_dir, config), env)


def dump_keys(keys: list[ApiKey]) -> str:
    """The keys as JSON for ``ukr keys list --json``: names, scopes, creation; no hashes."""
    return json.dumps([{"name": k.name, "scopes": list(k.scopes), "created_at": k.created_at}
                       for k in keys], indent=2)  # fmt: skip
