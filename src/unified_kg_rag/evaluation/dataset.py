"""Evaluation datasets: JSONL, one question per line.

Each line is an object with ``question`` (string), ``answers`` (list of strings, may be empty)
and ``supporting`` (list of strings: the passages that support the answer, named by document
path, file stem, title or document id); ``id`` is optional. Optional fields (seed 000 §9,
§9.2, §9.3): ``category`` (question type, for per-category deltas), ``answerable`` (false: the
corpus cannot answer it, scored by abstention only), ``evidence`` (text snippets; a retrieved
text unit holding one is a supporting passage, for corpora of long documents), ``assertions``
(statements a good answer supports, or for ``kind: negative`` must not state), ``messages``
(message guids the answer must surface) and ``metadata`` (kept as is).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from unified_kg_rag.util.errors import UsageError

__all__ = ["Assertion", "EvalItem", "checked_item", "load_dataset", "read_json_objects"]


class Assertion(BaseModel):
    """A statement an answer is checked against (BenchmarkQED's AutoE, seed 000 §9.3).

    Attributes:
        text: the statement.
        kind: ``positive`` (a good answer supports it) or ``negative`` (a known falsehood:
            an answer that supports it violates it).
        sources: where it came from (text-unit ids or document names), for review.
    """

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)
    kind: Literal["positive", "negative"] = "positive"
    sources: list[str] = Field(default_factory=list)


class EvalItem(BaseModel):
    """One evaluation question (a numeric ``id`` is read as text).

    Attributes:
        id: the question id (the line number when absent).
        question: the question.
        answers: gold answers; any one counts.
        supporting: the documents that support the answer (path, stem, title or id).
        category: the question type (``2-hop``, ``Fact Retrieval`` ...), or None.
        answerable: False when the corpus cannot answer it (an abstention is then right).
        evidence: text snippets that support the answer; a retrieved text unit whose text
            holds one (normalised) counts as a supporting passage.
        assertions: statements the answer is judged against (``--judge assertions``).
        messages: message guids a good answer surfaces (message archives).
        metadata: anything else the dataset carries, kept as is.
    """

    model_config = ConfigDict(coerce_numbers_to_str=True)

    id: str = ""
    question: str
    answers: list[str] = Field(default_factory=list)
    supporting: list[str] = Field(default_factory=list)
    category: str | None = None
    answerable: bool = True
    evidence: list[str] = Field(default_factory=list)
    assertions: list[Assertion] = Field(default_factory=list)
    messages: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


def load_dataset(path: Path) -> list[EvalItem]:
    """Read a JSONL dataset.

    Raises:
        UsageError: the file is missing, a line is not a JSON object, a line lacks a
            non-empty ``question``, or two lines have the same ``id`` (a line without one
            takes its line number); the message names the file and line number.
    """
    items: list[EvalItem] = []
    seen: dict[str, int] = {}  # id -> line: saved rows are keyed by question id
    for number, where, data in read_json_objects(path):
        try:
            item = EvalItem.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise UsageError(f"{loc}: {first['msg']}", field=where) from exc
        items.append(checked_item(item, number, where, seen))
    if not items:
        raise UsageError("no questions in the dataset", field=str(path))
    return items


def read_json_objects(path: Path) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Yield ``(line number, "FILE:LINE", object)`` for each non-blank line of a JSONL file.

    Raises:
        UsageError: the file cannot be read or is not UTF-8 (field: the file), or a line is
            not JSON or not a JSON object (field ``FILE:LINE``).
    """
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror or exc}", field=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise UsageError("not UTF-8 text", field=str(path)) from exc
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"not JSON ({exc.msg})", field=where) from exc
        if not isinstance(data, dict):
            kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
                type(data), "a number")
            raise UsageError(f'not a JSON object ({kind}); expected {{"question": ...}}',
                             field=where)  # fmt: skip
        yield number, where, data


def checked_item(item: EvalItem, number: int, where: str, seen: dict[str, int]) -> EvalItem:
    """Return ``item`` of line ``number`` with its default id, after the file-level checks.

    Records its id in ``seen`` (id → line number).

    Raises:
        UsageError: (field ``where``) a blank question, or an id an earlier line has (rows
            are keyed by id, so two questions with one id would merge).
    """
    if not item.question.strip():
        raise UsageError("question: must not be empty", field=where)
    if not item.id:
        item = item.model_copy(update={"id": str(number)})
    if item.id in seen:
        raise UsageError(f"id: {item.id!r} is also the id of line {seen[item.id]}; ids "
                         "must be unique", field=where)  # fmt: skip
    seen[item.id] = number
    return item
