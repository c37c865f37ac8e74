"""Converting public multi-hop QA sets into a `ukr eval` dataset plus a corpus folder.

``hipporag``: HippoRAG's layout: a questions file (MuSiQue native with ``paragraphs`` holding
``paragraph_text``/``is_supporting``; HippoRAG 2 style with ``paragraphs`` holding ``text``; or
2Wiki/HotpotQA style with ``supporting_facts`` titles) and a corpus file ``[{title, text}]``.
Writes ``OUT/corpus/NNNNN.md`` (``# title`` then the passage) and ``OUT/dataset.jsonl`` whose
``supporting`` names those files' stems.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from unified_kg_rag.evaluation.dataset import EvalItem
from unified_kg_rag.util.errors import UsageError

__all__ = ["PrepareReport", "prepare_hipporag"]


class PrepareReport(BaseModel):
    """What `prepare_hipporag` wrote."""

    dataset: str
    corpus_dir: str
    passages: int
    questions: int
    unmatched_supporting: int


def _load_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror or exc}", field=str(path)) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"not a JSON file ({exc})", field=str(path)) from exc


def _answers(q: Mapping[str, object]) -> list[str]:
    out: list[str] = []
    for key in ("answer", "answers", "answer_aliases", "possible_answers"):
        value = q.get(key)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            out.extend(str(v) for v in value if isinstance(v, str))
    return list(dict.fromkeys(a for a in out if a.strip()))


def _supporting(q: Mapping[str, object]) -> list[tuple[str, str | None]]:
    """Return ``(title, text or None)`` of each supporting passage of a question."""
    found: list[tuple[str, str | None]] = []
    paragraphs = q.get("paragraphs")
    if isinstance(paragraphs, list):
        for p in paragraphs:
            if isinstance(p, dict) and p.get("is_supporting"):
                text = p.get("paragraph_text", p.get("text"))
                found.append((str(p.get("title", "")), str(text) if text is not None else None))
    facts = q.get("supporting_facts")
    if not found and isinstance(facts, list):
        titles = [str(f[0]) for f in facts if isinstance(f, list | tuple) and f]
        found.extend((t, None) for t in dict.fromkeys(titles))
    return found


def _category(q: Mapping[str, object]) -> str | None:
    """``2-hop``, ``3-hop`` ... from MuSiQue's ``question_decomposition``; 2Wiki's ``type``."""
    steps = q.get("question_decomposition")
    if isinstance(steps, list) and steps:
        return f"{len(steps)}-hop"
    kind = q.get("type")
    return kind if isinstance(kind, str) and kind.strip() else None


def prepare_hipporag(
    questions_path: Path, corpus_path: Path, out_dir: Path, *, force: bool = False
) -> PrepareReport:
    """Write a corpus folder and a dataset from HippoRAG-format files.

    Args:
        questions_path: the questions JSON.
        corpus_path: the corpus JSON (a list of ``{title, text}``).
        out_dir: where ``dataset.jsonl`` and ``corpus/`` go.
        force: replace an existing non-empty ``out_dir/corpus`` (otherwise refused, so files
            of an earlier, larger corpus cannot linger among the new ones).

    Raises:
        UsageError: an input is unreadable or not in the expected shape, the output folder
            cannot be written, or ``out_dir/corpus`` is not empty and ``force`` is false.
    """
    try:
        return _prepare(questions_path, corpus_path, out_dir, force=force)
    except OSError as exc:
        where = exc.filename or out_dir
        raise UsageError(f"cannot write: {exc.strerror or exc}", field=str(where)) from exc


def _prepare(
    questions_path: Path, corpus_path: Path, out_dir: Path, *, force: bool
) -> PrepareReport:
    corpus = _load_json(corpus_path)
    questions = _load_json(questions_path)
    if not isinstance(corpus, list) or not all(isinstance(p, dict) and "text" in p for p in corpus):
        raise UsageError("expected a list of {title, text} objects", field=str(corpus_path))
    if not isinstance(questions, list) or not all(
        isinstance(q, dict) and "question" in q for q in questions
    ):
        raise UsageError("expected a list of question objects", field=str(questions_path))

    corpus_dir = out_dir / "corpus"
    if corpus_dir.exists() and any(corpus_dir.iterdir()):
        if not force:
            raise UsageError(
                "is not empty; choose another --out, or pass --force to replace it",
                field=str(corpus_dir),
            )
        shutil.rmtree(corpus_dir)
    corpus_dir.mkdir(parents=True, exist_ok=True)
    by_text: dict[tuple[str, str], str] = {}
    by_title: dict[str, list[str]] = {}
    width = max(5, len(str(len(corpus))))
    for i, passage in enumerate(corpus):
        title = str(passage.get("title", "")).strip()
        text = str(passage["text"]).strip()
        stem = f"{i:0{width}d}"
        body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
        (corpus_dir / f"{stem}.md").write_text(body, encoding="utf-8")
        by_text.setdefault((title, text), stem)
        by_title.setdefault(title, []).append(stem)

    unmatched = 0
    items: list[EvalItem] = []
    for n, q in enumerate(questions, start=1):
        stems: list[str] = []
        for sup_title, sup_text in _supporting(q):
            found: str | None = None
            if sup_text is not None:
                found = by_text.get((sup_title.strip(), sup_text.strip()))
            if found is None:
                candidates = by_title.get(sup_title.strip(), [])
                found = candidates[0] if len(candidates) == 1 else None
            if found is None:
                unmatched += 1
            else:
                stems.append(found)
        items.append(
            EvalItem(
                id=str(q.get("id", q.get("_id", n))),
                question=str(q["question"]),
                answers=_answers(q),
                supporting=list(dict.fromkeys(stems)),
                category=_category(q),
            )
        )
    dataset = out_dir / "dataset.jsonl"
    dataset.write_text("".join(item.model_dump_json() + "\n" for item in items), encoding="utf-8")
    return PrepareReport(
        dataset=str(dataset),
        corpus_dir=str(corpus_dir),
        passages=len(corpus),
        questions=len(items),
        unmatched_supporting=unmatched,
    )
