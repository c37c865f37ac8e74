"""Versioned prompt templates (Markdown files in this package) and their loader.

A template's file name carries its version (``answer_system.v1.md``); changing a prompt adds a
new version so cached replies of the old one are never served for the new.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["load_prompt"]


@cache
def load_prompt(name: str) -> str:
    """Return the text of the prompt template ``name`` (e.g. ``"answer_system.v1"``).

    Raises:
        FileNotFoundError: no template has that name.
    """
    return resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")
