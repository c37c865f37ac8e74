"""SQL for `Filters` on the JSONB ``fields`` of PostgreSQL search records.

Semantics match the SQLite store: a scalar value is an equality (``None`` matches a missing or
null field); a sequence means "any of these" (an empty sequence matches nothing). Equality is
JSONB equality, served by the ``jsonb_path_ops`` GIN index through containment (``@>``):
``1`` equals ``1.0``, ``"1"`` is not ``1``, and a boolean equals only a boolean.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql
from psycopg.types.json import Jsonb

from unified_kg_rag.domain.models import MetadataValue
from unified_kg_rag.ports import Filters

__all__ = ["filter_clause", "pg_text"]


def pg_text(text: str) -> str:
    """Return ``text`` storable by PostgreSQL: NUL (refused in text and JSONB) becomes U+FFFD."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _equals(
    column: sql.Composable, key: str, value: MetadataValue
) -> tuple[sql.Composable, list[object]]:
    if value is None:
        return (
            sql.SQL("({col} -> %s IS NULL OR {col} -> %s = 'null'::jsonb)").format(col=column),
            [key, key],
        )
    stored = pg_text(value) if isinstance(value, str) else value
    return sql.SQL("{col} @> %s").format(col=column), [Jsonb({pg_text(key): stored})]


def filter_clause(
    filters: Filters | None, column: sql.Composable
) -> tuple[sql.Composable, list[object]]:
    """Build a condition for ``filters`` on the JSONB column ``column``.

    Returns:
        ``(sql, params)``: a condition starting with `` AND `` (empty when there are no
        filters) and its positional parameters.

    Raises:
        ValueError: a field name contains a double quote (refused as by the SQLite store), or
            a value is not a JSON scalar or a sequence of them.
    """
    if not filters:
        return sql.SQL(""), []
    clauses: list[sql.Composable] = []
    params: list[object] = []
    for key in sorted(filters):
        if '"' in key:
            raise ValueError(f"filter field names cannot contain double quotes: {key!r}")
        value = filters[key]
        if _is_scalar(value):
            clause, args = _equals(column, key, value)  # type: ignore[arg-type]
            clauses.append(clause)
            params += args
            continue
        if not isinstance(value, Sequence) or isinstance(value, bytes | str):
            raise ValueError(f"filter {key!r}: expected a JSON scalar or a sequence of them")
        values: list[MetadataValue] = list(value)
        if not all(_is_scalar(v) for v in values):
            raise ValueError(f"filter {key!r}: expected a sequence of JSON scalars")
        parts: list[sql.Composable] = []
        for v in values:
            clause, args = _equals(column, key, v)
            parts.append(clause)
            params += args
        clauses.append(sql.SQL("({})").format(sql.SQL(" OR ").join(parts)) if parts
                       else sql.SQL("FALSE"))
    return sql.SQL("").join(sql.SQL(" AND ") + c for c in clauses), params
