"""API keys of the service: the key file, keys from the environment, scopes, matching (issue 17)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from unified_kg_rag.service.keys import (
    KeyRing,
    Scope,
    add_key,
    env_keys,
    grants,
    hash_key,
    read_keys,
    remove_key,
)
from unified_kg_rag.util.errors import ConfigurationError, UsageError


def test_the_key_file_holds_hashes_names_scopes_and_times_never_a_key(tmp_path: Path) -> None:
    path = tmp_path / ".ukr" / "api_keys.json"
    key = add_key(path, "ci", "write", now=1_700_000_000.0)
    assert key.startswith("ukr_") and len(key) == 4 + 43  # 256 random bits, URL-safe
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert key not in text and key[4:] not in text
    (stored,) = json.loads(text)["keys"]
    assert stored == {"name": "ci", "scopes": ["write"], "created_at": 1_700_000_000.0,
                      "sha256": hash_key(key)}
    assert [k.name for k in read_keys(path)] == ["ci"]
    assert not list(path.parent.glob(".*.tmp"))  # the atomic write left nothing behind


def test_key_names_are_unique_and_checked_and_removing_an_unknown_one_fails(
    tmp_path: Path,
) -> None:
    path = tmp_path / "keys.json"
    add_key(path, "ci", "read")
    with pytest.raises(UsageError, match="a key named 'ci' exists"):
        add_key(path, "ci", "admin")
    with pytest.raises(UsageError, match="a key name is 1-64"):
        add_key(path, "env:1", "read")  # the names of environment keys are reserved
    remove_key(path, "ci")
    assert read_keys(path) == []
    with pytest.raises(UsageError, match="no key named 'ci'"):
        remove_key(path, "ci")


def test_a_damaged_key_file_is_a_configuration_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text('{"keys": [{"name": "x"}]}')
    with pytest.raises(ConfigurationError, match=r"keys\.json: not a key file"):
        read_keys(path)


def test_environment_keys_are_hashed_and_named_by_position() -> None:
    keys = env_keys("UKR_API_KEYS", {"UKR_API_KEYS": " a:b:read , s3cret:write+read,"})
    assert [(k.name, k.scopes) for k in keys] == [("env:1", ("read",)),
                                                  ("env:2", ("read", "write"))]
    assert keys[0].sha256 == hash_key("a:b") and keys[1].sha256 == hash_key("s3cret")
    assert env_keys("UKR_API_KEYS", {}) == []


@pytest.mark.parametrize("value", [
    "hunter2-secret", "hunter2-secret:", ":read", "hunter2-secret:root",
    "ok:read,hunter2-secret:read+", "hunter2-secret:Read",
])
def test_a_malformed_environment_key_names_the_variable_never_the_key(value: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        env_keys("MY_KEYS", {"MY_KEYS": value})
    message = str(caught.value)
    assert message.startswith("MY_KEYS: entry ") and "KEY:SCOPE[+SCOPE]" in message
    assert "hunter2" not in message and "\n" not in message


@pytest.mark.parametrize(("held", "needed", "granted"), [
    (("read",), "read", True), (("read",), "write", False), (("read",), "admin", False),
    (("write",), "read", True), (("write",), "write", True), (("write",), "admin", False),
    (("admin",), "read", True), (("admin",), "write", True), (("admin",), "admin", True),
    (("read", "write"), "write", True), ((), "read", False),
])
def test_admin_includes_write_includes_read(
    held: tuple[Scope, ...], needed: Scope, granted: bool
) -> None:
    assert grants(held, needed) is granted


def test_the_ring_rereads_the_file_and_never_falls_open(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    ring = KeyRing(path, [])
    assert not ring.required and ring.match("anything") is None
    key = add_key(path, "ci", "read")
    assert ring.required  # the first key closes a ring that was open
    found = ring.match(key)
    assert found is not None and found.name == "ci"
    assert ring.match(key + "x") is None
    remove_key(path, "ci")
    assert ring.match(key) is None and ring.required  # removing every key does not reopen it
    path.write_text("not json")
    assert ring.keys == () and ring.required  # a damaged file fails closed
