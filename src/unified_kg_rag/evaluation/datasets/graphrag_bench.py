"""GraphRAG-Bench (Xiang et al., arXiv 2506.05690): novels or medical guidelines, typed questions.

Layout: a corpus file ``[{corpus_name, context}]`` and a questions file ``[{id, source,
question, answer, question_type, evidence, evidence_triple}]`` where ``source`` names a
``corpus_name``. ``evidence`` is the supporting sentences joined by ``"; "`` (a list of
strings is read too). The sentences are the question writer's restatements more often than
quotations: on the ten novels of ``shared/data/graphrag_bench`` 3 of 2,354 occur verbatim
(whitespace and case normalised). Each sentence is therefore located in its document by
content-word coverage (`locate.EvidenceLocator`, threshold ``min_coverage``) and the
document's own text of the best span becomes the evidence snippet, so a retrieved text unit
holding it counts as a supporting passage; sentences not located are left out of
``evidence`` (kept as written under ``metadata.evidence_as_written``), and ``located_only``
keeps only the questions with a located snippet.

Output: ``OUT/corpus/<corpus_name>.txt`` (one file per document) and ``OUT/dataset.jsonl``
with ``category`` = ``question_type``, ``answers`` = ``[answer]``, ``supporting`` = the source
document's file stem (document-level: the benchmark names no passage), ``evidence`` = the
located spans and ``metadata`` = ``{source, evidence_as_written, evidence_triple}``.
"""

from __future__ import annotations

import re
from pathlib import Path

from unified_kg_rag.evaluation.dataset import EvalItem
from unified_kg_rag.evaluation.datasets.common import (
    DatasetReport,
    fresh_corpus_dir,
    load_json,
    normalise,
    object_list,
    safe_stem,
    summarise,
    text_field,
    write_dataset,
    writing,
)
from unified_kg_rag.evaluation.datasets.locate import EvidenceLocator
from unified_kg_rag.util.errors import UsageError

__all__ = ["prepare_graphrag_bench", "split_evidence"]

# A "; " joins two sentences only after a sentence's closing punctuation (a quote or bracket
# may close it): "…Kynance Cove.; Gull Rock is…". A semicolon inside a sentence is kept.
_JOIN = re.compile(r"(?<=[.!?\"'\u2019\u201d)\]])\s*;\s+")


def split_evidence(value: object) -> list[str]:
    """Return the evidence sentences of a question's ``evidence`` field, empty pieces dropped.

    A string is split at ``;`` that follows a sentence's closing punctuation (on every
    question of the novel set this equals splitting on ``"; "``); a list keeps its strings.
    """
    if isinstance(value, list):
        pieces = [v for v in value if isinstance(v, str)]
    elif isinstance(value, str):
        pieces = _JOIN.split(value)
    else:
        return []
    return [p.strip() for p in pieces if p.strip()]


def prepare_graphrag_bench(
    corpus_path: Path,
    questions_path: Path,
    out_dir: Path,
    *,
    types: list[str] | None = None,
    limit: int | None = None,
    force: bool = False,
    min_coverage: float | None = 0.75,
    located_only: bool = False,
) -> DatasetReport:
    """Write a corpus folder and a dataset from GraphRAG-Bench files.

    Args:
        corpus_path: the corpus JSON, ``[{corpus_name, context}]``.
        questions_path: the questions JSON (layout in the module docstring).
        out_dir: where ``dataset.jsonl`` and ``corpus/`` go.
        types: keep only these ``question_type`` values (None: all).
        limit: keep the first N questions (after ``types``); every document is written.
        force: replace an existing non-empty ``out_dir/corpus``.
        min_coverage: the share of an evidence sentence's content words a document span
            must hold to be its location (None: keep the sentences as written, unlocated).
        located_only: keep only questions with at least one located evidence span.

    Raises:
        UsageError: an input is unreadable or not in that shape (the message names the file,
            or the question's index and field), a ``types`` entry names no type of the file,
            the output cannot be written, or ``out_dir/corpus`` is not empty without ``force``.
    """
    corpus = object_list(load_json(corpus_path), corpus_path, "{corpus_name, context}")
    questions = object_list(load_json(questions_path), questions_path, "question")
    docs: list[tuple[str, str]] = []
    for n, doc in enumerate(corpus):
        where = f"{corpus_path}[{n}]"
        name = text_field(doc, "corpus_name", where)
        if any(name == seen for seen, _ in docs):
            raise UsageError(f"a second document named {name!r}", field=f"{where}.corpus_name")
        docs.append((name, text_field(doc, "context", where)))
    for n, q in enumerate(questions):
        for key in ("question", "answer", "source"):
            text_field(q, key, f"{questions_path}[{n}]")
    if types is not None:
        present = sorted({str(q.get("question_type")) for q in questions})
        unknown = [t for t in types if t not in present]
        if unknown:
            raise UsageError(
                f"no question has type {unknown[0]!r} (types: {', '.join(present)})",
                field="--types",
            )
    kept = [q for q in questions if types is None or q.get("question_type") in types]
    kept = kept[:limit] if limit is not None else kept

    report = DatasetReport(format="graphrag-bench", dataset=str(out_dir / "dataset.jsonl"))
    report.skipped = len(questions) - len(kept)
    with writing(out_dir):
        corpus_dir = fresh_corpus_dir(out_dir, force=force)
        stems: dict[str, str] = {}
        texts: dict[str, str] = {}
        taken: set[str] = set()
        for name, context in docs:
            stem = safe_stem(name, taken)
            (corpus_dir / f"{stem}.txt").write_text(context, encoding="utf-8")
            stems[name] = stem
            texts[name] = normalise(context)
        locators = {name: EvidenceLocator(context) for name, context in docs} if (
            min_coverage is not None) else {}  # fmt: skip
        items: list[EvalItem] = []
        for n, q in enumerate(kept):
            source = str(q["source"])
            written = split_evidence(q.get("evidence"))
            if min_coverage is None:
                evidence = written
                found = [e for e in written if source in texts and normalise(e) in texts[source]]
            else:
                spans = [locators[source].locate(e, min_coverage=min_coverage)
                         if source in locators else None for e in written]  # fmt: skip
                found = [sp.text for sp in spans if sp is not None]
                evidence = list(dict.fromkeys(found))
            report.evidence_snippets += len(written)
            report.evidence_located += len(found)
            report.questions_fully_located += bool(written) and len(found) == len(written)
            if source not in stems:
                report.unmatched_supporting += 1
            if located_only and not found:
                report.skipped += 1
                continue
            metadata: dict[str, object] = {"source": source}
            if min_coverage is not None and written:
                metadata["evidence_as_written"] = written
            if isinstance(q.get("evidence_triple"), str) and str(q["evidence_triple"]).strip():
                metadata["evidence_triple"] = q["evidence_triple"]
            items.append(
                EvalItem(
                    id=str(q.get("id") or n + 1),
                    question=str(q["question"]),
                    answers=[str(q["answer"])] if str(q["answer"]).strip() else [],
                    supporting=[stems[source]] if source in stems else [],
                    category=str(q["question_type"]) if q.get("question_type") else None,
                    evidence=evidence,
                    metadata=metadata,
                )
            )
        write_dataset(out_dir / "dataset.jsonl", items)
    report.corpus_dir = str(corpus_dir)
    report.documents = len(docs)
    return summarise(report, items)
