"""Every route of the service names a scope but the three open ones (issue 17, security)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")


def test_only_health_and_versions_are_open(tmp_path: Path) -> None:
    from unified_kg_rag.service.app import create_app

    schema = create_app(tmp_path).openapi()
    operations = [(method.upper(), path, op) for path, ops in schema["paths"].items()
                  for method, op in ops.items()]  # fmt: skip
    open_ = {(m, p) for m, p, op in operations if not op.get("security")}
    assert open_ == {("GET", "/v1/health"), ("GET", "/v1/version"), ("GET", "/api/version")}
    assert len(operations) >= 30
