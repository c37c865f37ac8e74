"""Bring your own JSON Lines: rename fields into `EvalItem`'s and validate every line.

``--map question=query,answers=answer`` reads the dataset field on the left from the input
field on the right (a dotted name reads a nested field: ``answers=gold.text``). A string
where a list of strings is expected (``answers``, ``supporting``, ``evidence``,
``messages``) becomes a one-item list. Input fields that are neither mapped nor dataset
fields go to ``metadata`` (unless the line has a ``metadata`` of its own), so nothing is lost.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from unified_kg_rag.evaluation.dataset import EvalItem, checked_item, read_json_objects
from unified_kg_rag.evaluation.datasets.common import DatasetReport, summarise, write_dataset
from unified_kg_rag.util.errors import UsageError

__all__ = ["parse_field_map", "prepare_jsonl"]

_FIELDS = tuple(EvalItem.model_fields)
_LISTS = ("answers", "supporting", "evidence", "messages")
_MISSING = object()


def parse_field_map(text: str | None) -> dict[str, str]:
    """Parse ``"question=query,answers=answer"`` into ``{dataset field: input field}``.

    Raises:
        UsageError: a pair lacks ``=``, names no `EvalItem` field on the left, or maps one
            field twice (``field`` is ``--map``).
    """
    mapping: dict[str, str] = {}
    for pair in (text or "").split(","):
        if not pair.strip():
            continue
        target, sep, source = (p.strip() for p in pair.partition("="))
        if not sep or not target or not source:
            raise UsageError(f"expected FIELD=INPUT_FIELD, got {pair.strip()!r}", field="--map")
        if target not in _FIELDS:
            raise UsageError(
                f"{target!r} is no dataset field (fields: {', '.join(_FIELDS)})", field="--map"
            )
        if target in mapping:
            raise UsageError(f"{target!r} is mapped twice", field="--map")
        mapping[target] = source
    return mapping


def _lookup(data: dict[str, object], dotted: str) -> object:
    value: object = data
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _row(data: dict[str, object], mapping: dict[str, str]) -> dict[str, object]:
    row: dict[str, object] = {}
    used = {source.split(".")[0] for source in mapping.values()}
    for target in _FIELDS:
        value = _lookup(data, mapping[target]) if target in mapping else data.get(target, _MISSING)
        if value is _MISSING:
            continue
        if target in _LISTS and isinstance(value, str):
            value = [value]
        row[target] = value
    extra = {k: v for k, v in data.items() if k not in used and k not in _FIELDS}
    if extra and "metadata" not in row:
        row["metadata"] = extra
    return row


def prepare_jsonl(
    in_path: Path, out_path: Path, *, mapping: dict[str, str] | None = None, force: bool = False
) -> DatasetReport:
    """Validate and rewrite a JSON Lines question set as a `ukr eval` dataset.

    Args:
        in_path: the input, one JSON object per line (blank lines skipped).
        out_path: the dataset file to write.
        mapping: ``{dataset field: input field}`` (`parse_field_map`).
        force: replace an existing ``out_path``.

    Raises:
        UsageError: the input cannot be read, a line is not a JSON object, or a line fails
            `EvalItem` validation (``field`` is ``FILE:LINE``, the message names the dataset
            field and, when mapped, the input field), or repeats an earlier line's id;
            ``out_path`` exists without ``force`` or cannot be written; the input holds no
            question.
    """
    mapping = mapping or {}
    if out_path.exists() and not force:
        raise UsageError(
            "exists; choose another --out, or pass --force to replace it", field=str(out_path)
        )
    if out_path.resolve() == in_path.resolve():
        raise UsageError("is the input file; choose another --out", field=str(out_path))
    items: list[EvalItem] = []
    seen: dict[str, int] = {}  # id -> line (`ukr eval` keys its rows by question id)
    for number, where, data in read_json_objects(in_path):
        try:
            item = EvalItem.model_validate(_row(data, mapping))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            target = str(first["loc"][0]) if first["loc"] else ""
            source = f" (input field {mapping[target]!r})" if target in mapping else ""
            hint = ""
            if first["type"] == "missing" and target not in mapping:
                hint = f"; map it with --map {target}=INPUT_FIELD"
            raise UsageError(f"{loc}{source}: {first['msg']}{hint}", field=where) from exc
        items.append(checked_item(item, number, where, seen))
    if not items:
        raise UsageError("no questions in the file", field=str(in_path))
    try:
        write_dataset(out_path, items)
    except OSError as exc:
        raise UsageError(f"cannot write: {exc.strerror or exc}", field=str(out_path)) from exc
    return summarise(DatasetReport(format="jsonl", dataset=str(out_path)), items)
