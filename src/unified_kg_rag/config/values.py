"""Field value helpers shared by the configuration sections."""

from __future__ import annotations

__all__ = ["false_as_off"]


def false_as_off(value: object) -> object:
    """Read ``false`` as ``"off"`` (a ``BeforeValidator`` of fields with an ``off`` choice).

    YAML 1.1 (PyYAML) reads a bare ``off`` as the boolean false, so ``grounding: off`` written
    as the guides show it would otherwise be refused as "should be 'drop', 'weight' or 'off'".
    """
    return "off" if value is False else value
