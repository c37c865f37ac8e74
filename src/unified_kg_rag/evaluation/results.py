"""What a comparison run saves: one row per question × arm × repeat, and the run manifest.

A run directory holds (seed 000 §9, "a comparison is a pure function of saved files"):

- ``manifest.json``: `RunManifest`: what was run, over which index and configuration, with
  which models and versions; written first and rewritten when the run finishes.
- ``results.jsonl``: one `ResultRow` per question × arm × repeat, appended and flushed as
  each finishes, so an interrupted run resumes with the rows it lacks and a torn last line
  (a killed process) is ignored on reading.
- ``judgements.jsonl``: the LLM judges' verdicts (`JudgementRow`), likewise appended.
- ``comparison.json``: the scored comparison (`evaluation.comparison.Comparison`), rebuilt
  from the files above by ``--from-results`` without a model call.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError

from unified_kg_rag.domain.models import RAGOutput, Source, TokenUsage
from unified_kg_rag.util.errors import UsageError

__all__ = [
    "CLOSED_BOOK",
    "JudgementRow",
    "ResultRow",
    "RunManifest",
    "SourceRecord",
    "append_jsonl",
    "read_jsonl",
    "read_manifest",
    "repair_jsonl",
    "saved_judgements",
    "saved_rows",
    "write_manifest",
]

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

CLOSED_BOOK = "closed_book"
"""The arm that answers with the answer model alone, no retrieval (seed 000 §9.3)."""

MANIFEST = "manifest.json"
RESULTS = "results.jsonl"
JUDGEMENTS = "judgements.jsonl"
COMPARISON = "comparison.json"


class SourceRecord(BaseModel):
    """One source the answer step saw, as saved (`domain.models.Source`, trimmed).

    Attributes:
        n: its citation number.
        kind: ``text_unit``, ``entity``, ``relationship``, ``report`` ...
        id: the item id.
        text: the text placed in the context (what evidence matching reads).
        document_id: its document (text units).
        path: the document's path.
        title: the document's title.
        document_ids: the documents a graph item's text units come from.
        messages: guids of the messages the section holds (message archives).
        cited: the answer cites it.
    """

    n: int
    kind: str
    id: str
    text: str = ""
    document_id: str | None = None
    path: str | None = None
    title: str | None = None
    document_ids: list[str] = Field(default_factory=list)
    messages: list[str] = Field(default_factory=list)
    cited: bool = False

    @classmethod
    def from_source(cls, source: Source, cited: bool) -> SourceRecord:
        """Trim a `Source` to what scoring reads."""
        return cls(
            n=source.n,
            kind=source.kind,
            id=source.id,
            text=source.text,
            document_id=source.document_id,
            path=source.path,
            title=source.title,
            document_ids=list(source.document_ids),
            messages=[m.guid for m in source.messages],
            cited=cited,
        )


class ResultRow(BaseModel):
    """One answer (or retrieval) of one arm to one question, in one repeat.

    Attributes:
        question_id: the dataset item's id.
        arm: the strategy name, or ``closed_book``.
        repeat: 0-based repeat number.
        ok: the chain returned; False: it raised (``error`` says what), and the row scores 0
            on every metric other arms scored the question on (never dropped).
        error: ``ExceptionType: message`` of a failed row.
        strategy: the strategy that ran (``auto`` routes to another).
        answer: the answer text; None with ``--retrieval-only`` or on failure.
        answer_kind: ``generative``, ``extractive``, ``cannot_answer`` ...
        abstained: the chain declined (``cannot_answer`` or ``metadata.abstained``).
        sources: what the answer step saw, in context order.
        evidence_messages: guids of the messages the answer rests on (message archives).
        context_tokens: tokens of the packed context.
        usage: model usage of this answer (kept on failure: failing is not cheaper).
        latency_ms: wall time of the whole call, milliseconds.
        retrieval_ms: of the retrieval steps alone (rewrite, route, retrieve, fuse, pack).
        metadata: the chain's flags worth auditing (``degraded``, ``deadline_hit`` ...).
    """

    question_id: str
    arm: str
    repeat: int = 0
    ok: bool = True
    error: str | None = None
    strategy: str | None = None
    answer: str | None = None
    answer_kind: str | None = None
    abstained: bool = False
    sources: list[SourceRecord] = Field(default_factory=list)
    evidence_messages: list[str] = Field(default_factory=list)
    context_tokens: int = 0
    usage: TokenUsage = Field(default_factory=TokenUsage)
    latency_ms: float = 0.0
    retrieval_ms: float = 0.0
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, int]:
        """``(question_id, arm, repeat)``: unique within a run."""
        return (self.question_id, self.arm, self.repeat)

    @classmethod
    def from_output(
        cls, question_id: str, arm: str, repeat: int, out: RAGOutput, latency_ms: float
    ) -> ResultRow:
        """Build the row of an answered question."""
        cited = set(out.cited)
        meta = {k: out.metadata[k] for k in _AUDITED if k in out.metadata}
        return cls(
            question_id=question_id,
            arm=arm,
            repeat=repeat,
            strategy=out.strategy,
            answer=out.answer,
            answer_kind=out.answer_kind,
            abstained=out.answer_kind == "cannot_answer" or bool(out.metadata.get("abstained")),
            sources=[SourceRecord.from_source(s, s.n in cited) for s in out.sources],
            evidence_messages=[m.guid for m in out.evidence],
            context_tokens=int(out.metadata.get("context_tokens", 0) or 0),
            usage=out.usage,
            latency_ms=round(latency_ms, 3),
            retrieval_ms=retrieval_ms(out.timings_ms),
            metadata=_jsonable(meta),
        )


_AUDITED = (
    "degraded", "deadline_hit", "cannot_answer", "abstained", "weak_match", "answer_complete",
    "finish_reason", "invalid_citations", "route",
)  # fmt: skip


def _jsonable(value: dict[str, Any]) -> dict[str, Any]:
    """Return ``value`` as plain JSON types (unknown objects as their text)."""
    loaded: dict[str, Any] = json.loads(json.dumps(value, default=str))
    return loaded


def retrieval_ms(timings: dict[str, float]) -> float:
    """Return the retrieval wall time: rewrite, route, retrieve, fuse and pack steps, ms.

    The query embedding and any LLM calls of the strategy are included.
    """
    return round(sum(timings.get(k, 0.0) for k in ("rewrite", "route", "retrieve", "fuse",
                                                     "pack")), 3)  # fmt: skip


class JudgementRow(BaseModel):
    """One judge verdict, saved so a report or a re-score reads it without a model call.

    Attributes:
        judge: ``correctness``, ``pairwise`` or ``assertions``.
        question_id: the question.
        arm: the arm judged (the candidate, for ``pairwise``).
        baseline: the other arm of a pairwise verdict.
        repeat: the repeat judged.
        model: the judge's model id.
        verdict: the verdict as the judge module dumps it.
        scores: the per-query metrics the verdict gives (``judge/correctness`` ...); a
            failed verdict gives None for each, so it is counted, never silently dropped.
        error: why the judgement failed, if it did.
    """

    judge: str
    question_id: str
    arm: str
    baseline: str | None = None
    repeat: int = 0
    model: str = ""
    verdict: dict[str, Any] = Field(default_factory=dict)
    scores: dict[str, float | None] = Field(default_factory=dict)
    error: str | None = None


class RunManifest(BaseModel):
    """What a run was: dataset, index, settings, models and versions (seed 000 §9).

    Attributes:
        run_id: the run directory's name.
        created: ISO 8601 UTC time the run started.
        finished: when it finished (None while running or when interrupted).
        dataset: the dataset file (absolute path: ``--from-results`` reads it from any
            folder).
        dataset_sha256: SHA-256 of its bytes.
        questions: the question ids evaluated, in order.
        arms: the arms, in order (strategies, then ``closed_book``).
        baseline: the arm differences are taken against.
        repeats: runs per question and arm.
        retrieval_only: answers were not written.
        search_mode: the search mode, or None for the configuration's.
        top_k: text units retrieved per question (at least 10).
        index: the index name.
        index_record: what the index held when the run started (methodologies, counts,
            embedding model, documents per status).
        config_hash: SHA-256 of the settings that shape answers (``query``, ``llm`` model
            and sampling, ``embeddings``, ``chunking``, ``graph``), equal across machines.
        answer_model: the answer model's id, or None (extractive answers).
        judge_model: the judge's id, when a judge ran.
        judge_is_answer_model: the judge is the answer model (it favours its own answers).
        judges: the judges asked for (``correctness``, ``pairwise``, ``assertions``).
        seed: the seed of the bootstrap and of the judges' orderings.
        versions: package, Python and library versions.
        settings: the evaluation settings used (``answer_span``, resamples, confidence).
    """

    run_id: str
    created: str
    finished: str | None = None
    dataset: str
    dataset_sha256: str = ""
    questions: list[str] = Field(default_factory=list)
    arms: list[str] = Field(default_factory=list)
    baseline: str = ""
    repeats: int = 1
    retrieval_only: bool = False
    search_mode: str | None = None
    top_k: int = 10
    index: str = ""
    index_record: dict[str, Any] = Field(default_factory=dict)
    config_hash: str = ""
    answer_model: str | None = None
    judge_model: str | None = None
    judge_is_answer_model: bool = False
    judges: list[str] = Field(default_factory=list)
    seed: int = 0
    versions: dict[str, str] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)


def write_manifest(run_dir: Path, manifest: RunManifest) -> None:
    """Write ``run_dir/manifest.json`` atomically (a temporary file renamed over it)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / f".{MANIFEST}.tmp"
    tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, run_dir / MANIFEST)


def read_manifest(run_dir: Path) -> RunManifest:
    """Read ``run_dir/manifest.json``.

    Raises:
        UsageError: the folder holds no manifest, or it is not one.
    """
    path = run_dir / MANIFEST
    try:
        return RunManifest.model_validate_json(path.read_bytes())
    except FileNotFoundError as exc:
        raise UsageError("not a run folder (no manifest.json)", field=str(run_dir)) from exc
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror or exc}", field=str(path)) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        what = f"{loc}: {first['msg']}" if loc else first["msg"]
        raise UsageError(f"not a run manifest ({what})", field=str(path)) from exc


def saved_rows(path: Path) -> list[ResultRow]:
    """Return a run's answers, the last saved row of each question, arm and repeat.

    A failed answer is asked again when its run resumes; the new row is appended, so the
    latest row of a key is the one that counts (in the position of the key's first row).

    Raises:
        UsageError: as `read_jsonl`.
    """
    latest: dict[tuple[str, str, int], ResultRow] = {}
    for row in read_jsonl(path, ResultRow):
        latest[row.key] = row
    return list(latest.values())


def saved_judgements(path: Path) -> list[JudgementRow]:
    """Return a run's judge verdicts, the last saved one per judge, question, arm and repeat.

    Raises:
        UsageError: as `read_jsonl`.
    """
    latest: dict[tuple[str, str, str, int], JudgementRow] = {}
    for j in read_jsonl(path, JudgementRow):
        latest[(j.judge, j.question_id, j.arm, j.repeat)] = j
    return list(latest.values())


def append_jsonl(path: Path, row: BaseModel) -> None:
    """Append ``row`` as one JSON line and flush it to disk (a killed run keeps it)."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(row.model_dump_json() + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_jsonl(path: Path, model: type[M]) -> Iterator[M]:
    """Yield the rows of a JSON Lines file saved by a run; a missing file yields nothing.

    A torn last line (the process was killed mid-write) is skipped with a warning; a bad
    line elsewhere is an error.

    Raises:
        UsageError: a line other than the last is not a valid row (file and line named).
    """
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield model.model_validate_json(line)
        except ValidationError as exc:
            if number == len(lines):
                logger.warning("%s:%d: torn last line skipped (an interrupted run)", path, number)
                return
            raise UsageError(f"not a saved row ({exc.errors()[0]['msg']})",
                             field=f"{path}:{number}") from exc  # fmt: skip


def repair_jsonl(path: Path, model: type[BaseModel]) -> bool:
    """Make ``path`` safe to append to: drop a torn last line, end the file with a newline.

    A run killed mid-write leaves half a row without its newline; appending to it would glue
    the next row onto it, and that line (no longer the last) would then fail every read.
    Returns True when the file was changed. A missing file is left alone.
    """
    if not path.exists():
        return False
    data = path.read_bytes()
    if not data:
        return False
    body, newline, last = data.rstrip(b"\n").rpartition(b"\n")
    start = len(body) + len(newline)
    try:
        model.model_validate_json(last)
    except ValidationError:
        logger.warning("%s: torn last line dropped before resuming", path)
        with path.open("r+b") as fh:
            fh.truncate(start)
        return True
    if data.endswith(b"\n"):
        return False
    with path.open("ab") as fh:
        fh.write(b"\n")
    return True
