"""How ``--help`` reads: no ``<bool>`` type label on flags.

Typer labels every option with its type; for a flag (``--json``, ``--yes``, ``--help``) the
label ``<bool>`` is noise, as the flag takes no value. The command and group classes here
blank it; every command of the app is built with them.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand, TyperGroup

__all__ = ["UkrCommand", "UkrGroup"]


def _quiet_flags(params: list[Any]) -> list[Any]:
    """Blank the type label (metavar) of boolean flags; other options keep theirs."""
    for param in params:
        if getattr(param, "is_bool_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class UkrCommand(TyperCommand):
    """A Typer command whose help shows no ``<bool>`` on flags."""

    def get_params(self, ctx: Any) -> list[Any]:  # typer's vendored click Context
        """The command's parameters, flags without a type label."""
        return _quiet_flags(super().get_params(ctx))


class UkrGroup(TyperGroup):
    """A Typer group whose help shows no ``<bool>`` on flags."""

    def get_params(self, ctx: Any) -> list[Any]:  # typer's vendored click Context
        """The group's parameters, flags without a type label."""
        return _quiet_flags(super().get_params(ctx))
