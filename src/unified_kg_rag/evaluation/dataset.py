"""Evaluation datasets: JSONL, one question per line.

Each line is an object with ``question`` (string), ``answers`` (list of strings, may be empty)
and ``supporting`` (list of strings: the passages that support the answer, named by document
path, file stem, title or document id); ``id`` is optional.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from unified_kg_rag.util.errors import UsageError

__all__ = ["EvalItem", "load_dataset"]


class EvalItem(BaseModel):
    """One evaluation question (a numeric ``id`` is read as text)."""

    model_config = ConfigDict(coerce_numbers_to_str=True)

    id: str = ""
    question: str
    answers: list[str] = Field(default_factory=list)
    supporting: list[str] = Field(default_factory=list)


def load_dataset(path: Path) -> list[EvalItem]:
    """Read a JSONL dataset.

    Raises:
        UsageError: the file is missing, a line is not JSON, or a line lacks a non-empty
            ``question``; the message names the file and line number.
    """
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror or exc}", field=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise UsageError("not UTF-8 text", field=str(path)) from exc
    items: list[EvalItem] = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"not JSON ({exc.msg})", field=where) from exc
        try:
            item = EvalItem.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise UsageError(f"{loc}: {first['msg']}", field=where) from exc
        if not item.question.strip():
            raise UsageError("question: must not be empty", field=where)
        items.append(item if item.id else item.model_copy(update={"id": str(number)}))
    if not items:
        raise UsageError("no questions in the dataset", field=str(path))
    return items
