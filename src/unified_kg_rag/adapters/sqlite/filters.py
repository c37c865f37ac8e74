"""SQL for `Filters`: equality (and "any of") on the JSON ``fields`` of search records.

A scalar value matches with ``IS`` (so ``None`` matches a missing or null field); a sequence
value means "any of these" (an empty sequence matches nothing). Values compare with SQLite's
rules for the JSON types: ``True`` equals ``1``, ``1`` equals ``1.0``, ``"1"`` is not ``1``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from unified_kg_rag.domain.models import MetadataValue
from unified_kg_rag.ports import Filters

__all__ = ["filter_clause"]

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.\- ]*")


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def filter_clause(filters: Filters | None, column: str) -> tuple[str, list[object]]:
    """Build a SQL condition for ``filters`` on the JSON text column ``column``.

    Args:
        filters: ``field -> value`` or ``field -> [values]``; None or empty means no filter.
        column: the (trusted, qualified) column holding the JSON object of fields.

    Returns:
        ``(sql, params)``: a condition starting with `` AND `` (empty when there are no
        filters) and its parameters.

    Raises:
        ValueError: a field name contains a double quote, or a value is not a JSON scalar.
    """
    if not filters:
        return "", []
    clauses: list[str] = []
    params: list[object] = []
    for key in sorted(filters):
        if '"' in key:
            raise ValueError(f"filter field names cannot contain double quotes: {key!r}")
        field, field_params = _field(column, key)
        value = filters[key]
        if _is_scalar(value):
            clauses.append(f"{field} IS ?")
            params += [*field_params, value]
            continue
        if not isinstance(value, Sequence) or isinstance(value, bytes):
            raise ValueError(f"filter {key!r}: expected a JSON scalar or a sequence of them")
        values: list[MetadataValue] = list(value)
        if not all(_is_scalar(v) for v in values):
            raise ValueError(f"filter {key!r}: expected a sequence of JSON scalars")
        present = [v for v in values if v is not None]
        parts: list[str] = []
        if present:
            parts.append(f"{field} IN ({', '.join('?' * len(present))})")
            params += [*field_params, *present]
        if len(present) < len(values):
            parts.append(f"{field} IS NULL")
            params += field_params
        clauses.append(f"({' OR '.join(parts)})" if parts else "0")
    return "".join(f" AND {c}" for c in clauses), params


def _field(column: str, key: str) -> tuple[str, list[object]]:
    """Return the SQL value of field ``key`` of the JSON in ``column`` and its parameters.

    A plain ASCII key uses ``json_extract`` with a path; any other key (non-ASCII letters,
    backslashes), which the stored JSON may hold escaped, is looked up by ``json_each``,
    which compares decoded keys.
    """
    if _PLAIN_KEY.fullmatch(key):
        return f"json_extract({column}, ?)", [f'$."{key}"']
    return f"(SELECT value FROM json_each({column}) WHERE key = ?)", [key]
