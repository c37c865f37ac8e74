"""MultiHop-RAG (Tang and Yang, arXiv 2401.15391): news articles and multi-document queries.

Layout: a corpus file ``[{title, author, source, published_at, category, url, body}]`` and a
questions file ``[{query, answer, question_type, evidence_list: [{title, author, url,
source, category, published_at, fact}]}]``. Question types are ``inference_query``,
``comparison_query``, ``temporal_query`` and ``null_query``; a ``null_query`` (or any answer
"Insufficient information.") has no answer in the corpus.

Output: ``OUT/corpus/NNNNN.md`` (``# title``, then the body) per article and
``OUT/dataset.jsonl`` with ``category`` = ``question_type``, ``supporting`` = the files of the
evidence articles (matched by URL, else by a title that names one article), ``evidence`` =
the facts, and for a null query ``answerable: false`` with no answers.
"""

from __future__ import annotations

from pathlib import Path

from unified_kg_rag.evaluation.dataset import EvalItem
from unified_kg_rag.evaluation.datasets.common import (
    DatasetReport,
    fresh_corpus_dir,
    load_json,
    normalise,
    object_list,
    summarise,
    text_field,
    write_dataset,
    writing,
)
from unified_kg_rag.util.errors import UsageError

__all__ = ["prepare_multihop_rag"]

_NO_ANSWER = "insufficient information."


def prepare_multihop_rag(
    corpus_path: Path, questions_path: Path, out_dir: Path, *, force: bool = False
) -> DatasetReport:
    """Write a corpus folder and a dataset from MultiHop-RAG files.

    Args:
        corpus_path: the articles JSON (layout in the module docstring).
        questions_path: the queries JSON.
        out_dir: where ``dataset.jsonl`` and ``corpus/`` go.
        force: replace an existing non-empty ``out_dir/corpus``.

    Raises:
        UsageError: an input is unreadable or not in that shape (the message names the file,
            or the entry's index and field), the output cannot be written, or
            ``out_dir/corpus`` is not empty without ``force``.
    """
    corpus = object_list(load_json(corpus_path), corpus_path, "article")
    questions = object_list(load_json(questions_path), questions_path, "query")
    for n, article in enumerate(corpus):
        text_field(article, "title", f"{corpus_path}[{n}]")
        text_field(article, "body", f"{corpus_path}[{n}]")
    for n, q in enumerate(questions):
        where = f"{questions_path}[{n}]"
        text_field(q, "query", where)
        evidence = q.get("evidence_list", [])
        if not isinstance(evidence, list) or not all(isinstance(e, dict) for e in evidence):
            raise UsageError("expected a list of objects", field=f"{where}.evidence_list")

    report = DatasetReport(format="multihop-rag", dataset=str(out_dir / "dataset.jsonl"))
    width = max(5, len(str(len(corpus))))
    by_url: dict[str, str] = {}
    by_title: dict[str, list[str]] = {}
    with writing(out_dir):
        corpus_dir = fresh_corpus_dir(out_dir, force=force)
        for n, article in enumerate(corpus):
            stem = f"{n:0{width}d}"
            title, body = str(article["title"]).strip(), str(article["body"]).strip()
            text = f"# {title}\n\n{body}\n" if title else f"{body}\n"
            (corpus_dir / f"{stem}.md").write_text(text, encoding="utf-8")
            if isinstance(article.get("url"), str) and article["url"]:
                by_url.setdefault(str(article["url"]), stem)
            by_title.setdefault(normalise(title), []).append(stem)
        items: list[EvalItem] = []
        for n, q in enumerate(questions, start=1):
            stems: list[str] = []
            facts: list[str] = []
            evidence = q.get("evidence_list")
            for ev in evidence if isinstance(evidence, list) else []:
                if not isinstance(ev, dict):  # checked above
                    continue
                fact = ev.get("fact")
                if isinstance(fact, str) and fact.strip():
                    facts.append(fact.strip())
                titled = by_title.get(normalise(str(ev.get("title") or "")), [])
                found = by_url.get(str(ev.get("url") or ""))
                found = found or (titled[0] if len(titled) == 1 else None)
                if found is None:
                    report.unmatched_supporting += 1
                else:
                    stems.append(found)
            raw_answer = q.get("answer")
            answer = raw_answer.strip() if isinstance(raw_answer, str) else ""
            kind = q.get("question_type")
            answerable = kind != "null_query" and answer.casefold() != _NO_ANSWER
            items.append(
                EvalItem(
                    id=str(q.get("id") or n),
                    question=str(q["query"]),
                    answers=[answer] if answerable and answer else [],
                    supporting=list(dict.fromkeys(stems)),
                    category=str(kind) if kind else None,
                    answerable=answerable,
                    evidence=list(dict.fromkeys(facts)),
                )
            )
        write_dataset(out_dir / "dataset.jsonl", items)
    report.corpus_dir = str(corpus_dir)
    report.documents = len(corpus)
    report.evidence_snippets = sum(len(i.evidence) for i in items)
    return summarise(report, items)
