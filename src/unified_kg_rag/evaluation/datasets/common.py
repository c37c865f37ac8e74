"""What the dataset converters share: reading JSON, the output folder rule, names, the report."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, Field

from unified_kg_rag.evaluation.dataset import EvalItem
from unified_kg_rag.util.errors import UsageError

__all__ = [
    "DatasetReport",
    "fresh_corpus_dir",
    "load_json",
    "normalise",
    "object_list",
    "safe_stem",
    "summarise",
    "text_field",
    "write_dataset",
    "writing",
]

_UNSAFE = re.compile(r"[^\w.-]+")
_SPACE = re.compile(r"\s+")


class DatasetReport(BaseModel):
    """What a ``ukr eval prepare`` converter wrote (the ``--json`` output).

    Attributes:
        format: the converter (``graphrag-bench``, ``multihop-rag``, ``jsonl``).
        dataset: the dataset file written.
        corpus_dir: the corpus folder written (None for ``jsonl``).
        documents: corpus files written.
        questions: dataset rows written.
        by_category: rows per ``category`` (``""`` for rows without one).
        answerable: rows with ``answerable`` true.
        unanswerable: rows with ``answerable`` false.
        skipped: source questions left out (by ``--types`` or ``--limit``).
        unmatched_supporting: supporting references that name no corpus document.
        evidence_snippets: evidence sentences read.
        evidence_located: of those, how many were located in their source document: by
            content-word coverage, or verbatim (whitespace and case normalised) with
            ``--min-coverage 0`` (GraphRAG-Bench only; others 0).
        questions_fully_located: questions all of whose evidence snippets were located.
    """

    format: str
    dataset: str
    corpus_dir: str | None = None
    documents: int = 0
    questions: int = 0
    by_category: dict[str, int] = Field(default_factory=dict)
    answerable: int = 0
    unanswerable: int = 0
    skipped: int = 0
    unmatched_supporting: int = 0
    evidence_snippets: int = 0
    evidence_located: int = 0
    questions_fully_located: int = 0


def load_json(path: Path) -> object:
    """Return the decoded JSON of ``path`` (a BOM tolerated).

    Raises:
        UsageError: the file cannot be read or is not JSON (the message names it).
    """
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror or exc}", field=str(path)) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"not a JSON file ({exc})", field=str(path)) from exc


def object_list(data: object, path: Path, shape: str) -> list[dict[str, object]]:
    """Return ``data`` as a list of JSON objects, else refuse naming ``path`` and ``shape``.

    Raises:
        UsageError: ``data`` is not a list, or an entry is not an object.
    """
    if not isinstance(data, list):
        raise UsageError(f"expected a list of {shape} objects", field=str(path))
    for n, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise UsageError(f"entry {n} is not an object (expected {shape})", field=str(path))
    return data


def text_field(entry: dict[str, object], key: str, where: str) -> str:
    """Return the string ``entry[key]``.

    Raises:
        UsageError: the field is missing or not a string (``field`` is ``where.key``).
    """
    value = entry.get(key)
    if not isinstance(value, str):
        what = "missing" if value is None else f"not a string ({type(value).__name__})"
        raise UsageError(f"{what}", field=f"{where}.{key}")
    return value


def fresh_corpus_dir(out_dir: Path, *, force: bool) -> Path:
    """Return an empty ``out_dir/corpus`` (created; an earlier one removed under ``force``).

    Raises:
        UsageError: the folder is not empty and ``force`` is false (files of an earlier,
            larger corpus would linger among the new ones).
    """
    corpus_dir = out_dir / "corpus"
    if corpus_dir.exists() and any(corpus_dir.iterdir()):
        if not force:
            raise UsageError(
                "is not empty; choose another --out, or pass --force to replace it",
                field=str(corpus_dir),
            )
        shutil.rmtree(corpus_dir)
    corpus_dir.mkdir(parents=True, exist_ok=True)
    return corpus_dir


@contextmanager
def writing(out: Path) -> Iterator[None]:
    """Turn an `OSError` raised inside into a one-line `UsageError` naming the file."""
    try:
        yield
    except OSError as exc:
        where = exc.filename or out
        raise UsageError(f"cannot write: {exc.strerror or exc}", field=str(where)) from exc


def safe_stem(name: str, taken: set[str]) -> str:
    """Return a file stem for ``name`` (letters, digits, ``.``, ``_``, ``-``) not in ``taken``.

    Other runs of characters become ``_``; a clash gets ``-2``, ``-3`` ...; the stem is
    added to ``taken``. ``"Novel-30752"`` stays as it is.
    """
    stem = _UNSAFE.sub("_", name.strip()).strip("._")[:120] or "doc"
    candidate, n = stem, 1
    while candidate.casefold() in taken:
        n += 1
        candidate = f"{stem}-{n}"
    taken.add(candidate.casefold())
    return candidate


def normalise(text: str) -> str:
    """Collapse whitespace runs to one space, strip and casefold (for verbatim look-ups)."""
    return _SPACE.sub(" ", text).strip().casefold()


def write_dataset(path: Path, items: Sequence[EvalItem]) -> None:
    """Write ``items`` as JSON Lines to ``path`` (parent folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(item.model_dump_json(exclude_defaults=True) + "\n" for item in items),
        encoding="utf-8",
    )


def summarise(report: DatasetReport, items: Sequence[EvalItem]) -> DatasetReport:
    """Fill ``questions``, ``by_category``, ``answerable`` and ``unanswerable`` from ``items``."""
    report.questions = len(items)
    report.by_category = dict(sorted(Counter(i.category or "" for i in items).items()))
    report.answerable = sum(1 for i in items if i.answerable)
    report.unanswerable = len(items) - report.answerable
    return report
