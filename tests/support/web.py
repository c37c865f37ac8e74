"""Accessibility checks of the web app in the browser tests: axe-core run in the page.

axe-core's ``axe.min.js`` comes inside the ``axe-playwright-python`` wheel (the ``dev``
extra); nothing is downloaded at run time. Without the package the calling test skips.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

__all__ = ["axe_violations", "describe_violations", "serious_findings"]


def _axe_script() -> str:
    base = pytest.importorskip("axe_playwright_python.base",
                               reason="axe-playwright-python is not installed (dev extra)")  # fmt: skip
    return Path(base.AXE_FILE_PATH).read_text(encoding="utf-8")


def axe_violations(
    page: Any,
    impact: tuple[str, ...] = ("serious", "critical"),
    *,
    context: str | None = None,
) -> list[dict[str, Any]]:
    """Run axe-core on ``page`` (a playwright sync `Page`); return its violations of ``impact``.

    Args:
        page: the page, in the state to check (an answer shown, a dialog open ...).
        impact: the impacts kept (axe's ``minor``, ``moderate``, ``serious``, ``critical``).
        context: a CSS selector to check only part of the page; None: the whole document.

    Returns:
        axe's violation objects (``id``, ``impact``, ``help``, ``nodes`` with ``target`` and
        ``html``), those of ``impact`` only.
    """
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(_axe_script())  # through the devtools protocol: the page's CSP allows it
    target = json.dumps(context) if context else "document"
    results = page.evaluate(
        f"axe.run({target}, {{resultTypes: ['violations']}}).then(r => r.violations)"
    )
    return [v for v in results if v.get("impact") in impact]


def describe_violations(violations: list[dict[str, Any]]) -> str:
    """One line per violation and element: ``id (impact): help — target``, for an assertion."""
    return "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} — {', '.join(map(str, n['target']))}"
        for v in violations
        for n in v["nodes"]
    )


def serious_findings(page: Any) -> str:
    """axe-core's serious and critical findings on ``page``, one line each ("" for none).

    Without the dev extra's ``axe-playwright-python`` nothing is checked (a warning says so),
    so the rest of a browser test still runs.
    """
    import importlib.util
    import warnings

    if importlib.util.find_spec("axe_playwright_python") is None:
        warnings.warn("axe-playwright-python is not installed (dev extra): accessibility "
                      "not checked", stacklevel=2)  # fmt: skip
        return ""
    return describe_violations(axe_violations(page))
