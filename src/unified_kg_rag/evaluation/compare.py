"""Comparison runs: every arm over the same questions, saved row by row (seed 000 §9).

`run_comparison` answers each question with each strategy (and, with ``closed_book``, the
answer model alone) ``repeats`` times, appending one `ResultRow` per answer to
``results.jsonl`` as it finishes, then runs the judges asked for and writes
``comparison.json``. An interrupted run started again on the same folder runs only the rows
it lacks. `rescore` rebuilds the comparison from the saved files alone (``--from-results``),
optionally judging the saved answers again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from unified_kg_rag.domain.llm.cache_control import refresh_cache
from unified_kg_rag.domain.llm.usage import usage_scope
from unified_kg_rag.evaluation.app import EvalApp as App
from unified_kg_rag.evaluation.closed_book import answer_closed_book
from unified_kg_rag.evaluation.comparison import Comparison, StatsSettings, build_comparison
from unified_kg_rag.evaluation.dataset import EvalItem
from unified_kg_rag.evaluation.gates import Gate
from unified_kg_rag.evaluation.judging import JUDGES, run_judges
from unified_kg_rag.evaluation.results import (
    CLOSED_BOOK,
    COMPARISON,
    JUDGEMENTS,
    RESULTS,
    ResultRow,
    RunManifest,
    SourceRecord,
    append_jsonl,
    read_manifest,
    repair_jsonl,
    retrieval_ms,
    saved_judgements,
    saved_rows,
    write_manifest,
)
from unified_kg_rag.evaluation.scoring import ScoringSettings
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.retrieval.catalog import strategy_catalog
from unified_kg_rag.retrieval.chain import RAGChain
from unified_kg_rag.retrieval.models import RetrievalOutput
from unified_kg_rag.util.errors import UsageError

__all__ = ["RunRequest", "arm_parts", "config_hash", "rescore", "run_comparison"]

Progress = Callable[[str, int, int], None]
"""``(arm, done, total)`` after each answer."""

_MIN_K = 10
_MODES = ("hybrid", "vector", "lexical")


def arm_parts(arm: str) -> tuple[str, str | None]:
    """Split an arm ``STRATEGY[:MODE]`` (``naive:vector``) into the strategy and search mode."""
    strategy, _, mode = arm.partition(":")
    return strategy, mode or None


@dataclass
class RunRequest:
    """One comparison run.

    Attributes:
        dataset: the dataset file (recorded in the manifest).
        items: its questions.
        arms: the strategies, in order; the first is the baseline unless ``baseline``.
        run_dir: where the run is saved (resumed when it holds this run).
        repeats: answers per question and arm (averaged per query before comparing).
        baseline: the arm differences are taken against (default: the first arm).
        closed_book: add the ``closed_book`` arm (the answer model without context).
        retrieval_only: skip the answer step.
        search_mode: ``hybrid``, ``vector`` or ``lexical`` (None: ``query.search_mode``).
        top_k: text units retrieved (at least 10, so recall@10 is defined).
        index: the index (None: ``query.index``).
        judges: ``correctness``, ``pairwise``, ``assertions``.
        gates: ``--fail-if`` gates.
    """

    dataset: Path
    items: list[EvalItem]
    arms: list[str]
    run_dir: Path
    repeats: int = 1
    baseline: str | None = None
    closed_book: bool = False
    retrieval_only: bool = False
    search_mode: str | None = None
    top_k: int | None = None
    index: str | None = None
    judges: list[str] = field(default_factory=list)
    gates: list[Gate] = field(default_factory=list)


def config_hash(app: App) -> str:
    """SHA-256 of the settings that shape answers, equal across machines (seed 000 §12).

    Covers ``query``, ``embeddings``, ``chunking``, ``graph``, ``indexing.methodologies``,
    the answer model's id and sampling (and the ``query``/``answer`` role models when they
    are not the default model), and ``evaluation.answer_span``; not paths, keys,
    retries or concurrency.
    """
    c = app.config
    llm = c.llm.model_dump(mode="json", include={"kind"})
    provider = getattr(c.llm, c.llm.kind, None)
    if provider is not None:
        llm["provider"] = provider.model_dump(
            mode="json", include={"model", "model_id", "temperature", "max_tokens"}
        )
    default = _bare_id(app.chat_model)
    roles = {r: _bare_id(app.model_for(r)) for r in ("query", "answer")}
    if any(v != default for v in roles.values()):  # a one-model config hashes as before
        llm["roles"] = roles
    settings = {
        "query": c.query.model_dump(mode="json"),
        "embeddings": c.embeddings.model_dump(mode="json", exclude={"openai": {"api_key"}}),
        "chunking": c.chunking.model_dump(mode="json"),
        "graph": c.graph.model_dump(mode="json"),
        "methodologies": c.methodologies(),
        "llm": llm,
        "answer_span": c.evaluation.answer_span,
    }
    blob = json.dumps(settings, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("unified-kg-rag", "numpy", "pydantic", "sentence-transformers", "torch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def scoring_settings(app: App, manifest: RunManifest) -> ScoringSettings:
    """The scoring settings of a run: ``evaluation`` config plus the manifest's models."""
    docs = manifest.index_record.get("documents", {})
    total = sum(int(v) for v in docs.values()) if isinstance(docs, dict) else 0
    return ScoringSettings(
        answer_span=manifest.settings.get("answer_span", app.config.evaluation.answer_span),
        prices=app.config.evaluation.prices,
        answer_model=manifest.answer_model,
        corpus_documents=total or None,
    )


def stats_settings(app: App) -> StatsSettings:
    """Bootstrap settings from ``evaluation``."""
    e = app.config.evaluation
    return StatsSettings(resamples=e.bootstrap_resamples, confidence=e.confidence, seed=e.seed)


async def _preflight(app: App, req: RunRequest) -> dict[str, Any]:
    """Refuse unknown or unserved strategies, search modes and judges before any answer."""
    if req.search_mode is not None and req.search_mode not in _MODES:
        raise UsageError(f"unknown search mode {req.search_mode!r}; modes: {', '.join(_MODES)}",
                         field="--mode")  # fmt: skip
    stores = app.index(req.index)
    catalog = await strategy_catalog(stores)
    if catalog.text_units == 0:
        raise UsageError(catalog.note or f"index {stores.name!r} holds no text units",
                         field="--index")  # fmt: skip
    known = {s.name: s for s in catalog.strategies}
    for arm in req.arms:
        name, mode = arm_parts(arm)
        info = known.get(name)
        if info is None:
            raise UsageError(f"unknown strategy {name!r}; strategies: {', '.join(known)}",
                             field="--strategies")  # fmt: skip
        if mode is not None and mode not in _MODES:
            raise UsageError(f"unknown search mode {mode!r} in {arm!r}; modes: "
                             f"{', '.join(_MODES)}", field="--strategies")  # fmt: skip
        if not info.served:
            raise UsageError(f"index {stores.name!r} does not serve {arm!r}: {info.how}",
                             field="--strategies")  # fmt: skip
    unknown = [j for j in req.judges if j not in JUDGES]
    if unknown:
        raise UsageError(f"unknown judge {unknown[0]!r}; judges: {', '.join(JUDGES)}",
                         field="--judge")  # fmt: skip
    if req.closed_book and req.retrieval_only:
        raise UsageError("the closed-book arm only answers; drop --retrieval-only",
                         field="--closed-book")  # fmt: skip
    if req.closed_book and app.model_for("answer") is None:
        raise UsageError("the closed-book arm needs an answer model (llm.kind is none)",
                         field="--closed-book")  # fmt: skip
    if req.judges and app.judge_model()[0] is None:
        raise UsageError("judges need a model: set evaluation.judge (or llm)", field="--judge")
    if req.judges and req.retrieval_only:
        raise UsageError("judges read answers; drop --retrieval-only", field="--judge")
    arms = [*dict.fromkeys(req.arms), *([CLOSED_BOOK] if req.closed_book else [])]
    _check_pairwise(req.judges, arms, req.baseline or arms[0])
    status = await app.status()
    record = next((i for i in status.indexes if i.name == stores.name), None)
    return {} if record is None else record.model_dump(
        mode="json", include={"methodologies", "embedding_model", "embedding_dimension",
                              "counts", "documents"})  # fmt: skip


def _check_pairwise(judges: Sequence[str], arms: Sequence[str], baseline: str) -> None:
    """Refuse ``pairwise`` when no arm but the baseline (and closed_book) would be judged."""
    if "pairwise" in judges and not any(a not in (baseline, CLOSED_BOOK) for a in arms):
        raise UsageError(f"pairwise compares an arm with the baseline ({baseline}): the run "
                         "has no other arm", field="--judge")  # fmt: skip


async def run_comparison(
    app: App, req: RunRequest, *, on_progress: Progress | None = None
) -> Comparison:
    """Run every arm over every question, judge, and compare (files in ``req.run_dir``).

    Raises:
        UsageError: an unknown or unserved strategy, an unknown judge, a judge or closed-book
            arm without a model or with ``retrieval_only``, ``pairwise`` without an arm
            besides the baseline, or a ``run_dir`` that holds a different run.
        StoreError: the store failed before the first answer (the checks). An answer that
            raises, for any reason, is saved as a failed row (scored 0, never dropped), so one
            bad question does not stop the run; its error is in the row and the summary.
    """
    if not req.arms:
        raise UsageError("name at least one strategy", field="--strategies")
    record = await _preflight(app, req)
    arms = list(dict.fromkeys(req.arms)) + ([CLOSED_BOOK] if req.closed_book else [])
    baseline = req.baseline or arms[0]
    if baseline not in arms:
        raise UsageError(f"{baseline!r} is not one of the arms ({', '.join(arms)})",
                         field="--baseline")  # fmt: skip
    judge, judge_is_answer = app.judge_model() if req.judges else (None, False)
    manifest = RunManifest(
        run_id=req.run_dir.name,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        dataset=str(req.dataset.resolve()),
        dataset_sha256=hashlib.sha256(req.dataset.read_bytes()).hexdigest(),
        questions=[i.id for i in req.items],
        arms=arms,
        baseline=baseline,
        repeats=req.repeats,
        retrieval_only=req.retrieval_only,
        search_mode=req.search_mode,
        top_k=max(req.top_k or 0, _MIN_K),
        index=app.index(req.index).name,
        index_record=record,
        config_hash=config_hash(app),
        answer_model=answer.model_id if (answer := app.model_for("answer")) else None,
        judge_model=judge.model_id if judge is not None else None,
        judge_is_answer_model=judge_is_answer,
        judges=list(req.judges),
        seed=app.config.evaluation.seed,
        versions=_versions(),
        settings={"answer_span": app.config.evaluation.answer_span},
    )
    _resume_check(req.run_dir, manifest)
    write_manifest(req.run_dir, manifest)
    repair_jsonl(req.run_dir / RESULTS, ResultRow)
    # a failed answer is asked again on resume (an outage should not stick to the run)
    done = {r.key for r in saved_rows(req.run_dir / RESULTS) if r.ok}
    chain = app.chain(req.index)
    results = req.run_dir / RESULTS
    if len(done) < len(req.items) * len(arms) * req.repeats:
        await _warm_up(app)
    for repeat in range(req.repeats):
        for arm in arms:
            for n, item in enumerate(req.items, start=1):
                if (item.id, arm, repeat) not in done:
                    row = await _answer(app, chain, item, arm, repeat, manifest)
                    append_jsonl(results, row)
                if on_progress is not None:
                    on_progress(arm, n + repeat * len(req.items), len(req.items) * req.repeats)
    rows = saved_rows(results)
    if judge is not None:
        await run_judges(app, judge, manifest, req.items, rows, req.run_dir, replace=False)
    manifest.finished = datetime.now(UTC).isoformat(timespec="seconds")
    write_manifest(req.run_dir, manifest)
    return _compare(app, manifest, req.items, req.gates, req.run_dir)


async def _warm_up(app: App) -> None:
    """Load the embedding model before the first timed answer.

    A local model loads its weights on first use: without this, the first arm's first
    answer pays for the load, and the baseline's latency looks worse than it is.
    """
    # a failing embedder fails each answer instead, saved as a failed row
    with contextlib.suppress(Exception):
        await app.embedder.embed_query("warm up")


def _resume_check(run_dir: Path, manifest: RunManifest) -> None:
    """Refuse a folder holding another run; a folder holding this run resumes."""
    if not (run_dir / "manifest.json").exists():
        if run_dir.exists() and any(run_dir.iterdir()):
            raise UsageError("is not empty and holds no run; choose another --out",
                             field=str(run_dir))  # fmt: skip
        return
    old = read_manifest(run_dir)
    same = ("dataset_sha256", "questions", "arms", "baseline", "repeats", "retrieval_only",
            "search_mode", "top_k", "index", "config_hash")  # fmt: skip
    differs = [k for k in same if getattr(old, k) != getattr(manifest, k)]
    if differs:
        raise UsageError(
            f"holds another run (its {', '.join(differs)} differ); choose another --out, or "
            "re-score it with --from-results",
            field=str(run_dir),
        )
    manifest.created = old.created


async def _answer(
    app: App, chain: RAGChain, item: EvalItem, arm: str, repeat: int, manifest: RunManifest
) -> ResultRow:
    """Answer one question with one arm; an exception becomes a failed row."""
    strategy, mode = arm_parts(arm)
    mode = mode or manifest.search_mode
    t0 = time.perf_counter()
    with usage_scope() as usage, refresh_cache(repeat > 0):
        try:
            if arm == CLOSED_BOOK:
                closed = app.model_for("answer")
                assert closed is not None  # checked by _preflight
                out = await answer_closed_book(closed, item.question, prompts=app.prompts)
                # no chain meters this call: its usage is the scope's
                out = out.model_copy(update={"usage": usage.model_copy()})
            elif manifest.retrieval_only:
                got = await chain.retrieve(item.question, strategy=strategy,
                                           search_mode=mode, top_k=manifest.top_k)  # fmt: skip
                return _retrieval_row(item, arm, repeat, got, (time.perf_counter() - t0) * 1e3)
            else:
                out = await chain.ainvoke(item.question, strategy=strategy, search_mode=mode,
                                          top_k=manifest.top_k)  # fmt: skip
        except Exception as exc:
            return ResultRow(question_id=item.id, arm=arm, repeat=repeat, ok=False,
                             error=f"{type(exc).__name__}: {exc}"[:500], usage=usage,
                             latency_ms=round((time.perf_counter() - t0) * 1e3, 3))  # fmt: skip
    return ResultRow.from_output(item.id, arm, repeat, out, (time.perf_counter() - t0) * 1e3)


def _retrieval_row(
    item: EvalItem, arm: str, repeat: int, out: RetrievalOutput, latency_ms: float
) -> ResultRow:
    return ResultRow(
        question_id=item.id, arm=arm, repeat=repeat, strategy=out.strategy,
        abstained=bool(out.metadata.get("cannot_answer")),
        sources=[SourceRecord.from_source(s, False) for s in out.sources],
        context_tokens=out.context_tokens, usage=out.usage, latency_ms=round(latency_ms, 3),
        retrieval_ms=retrieval_ms(out.timings_ms),
    )  # fmt: skip


def _compare(
    app: App, manifest: RunManifest, items: Sequence[EvalItem], gates: Sequence[Gate],
    run_dir: Path,
) -> Comparison:  # fmt: skip
    rows = saved_rows(run_dir / RESULTS)
    judgements = saved_judgements(run_dir / JUDGEMENTS)
    comp = build_comparison(manifest, items, rows, judgements,
                            scoring=scoring_settings(app, manifest), stats=stats_settings(app),
                            gates=gates)  # fmt: skip
    if manifest.judge_is_answer_model:
        comp.warnings.append(f"the judge is the answer model ({manifest.judge_model}): a judge "
                             "favours its own answers; set evaluation.judge to another model")
    comp.warnings += _missing_rows(manifest, rows)
    tmp = run_dir / f".{COMPARISON}.tmp"
    tmp.write_text(comp.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(run_dir / COMPARISON)
    return comp


def _missing_rows(manifest: RunManifest, rows: Sequence[ResultRow]) -> list[str]:
    """One warning per arm that lacks rows the manifest expects (an interrupted run).

    An arm's means are then over fewer questions than the others', which a side-by-side
    table does not show.
    """
    saved = {r.key for r in rows}
    expected = len(manifest.questions) * manifest.repeats
    out: list[str] = []
    for arm in manifest.arms:
        lacking = sum(1 for q in manifest.questions for k in range(manifest.repeats)
                      if (q, arm, k) not in saved)  # fmt: skip
        if lacking:
            out.append(f"{arm}: {lacking} of {expected} answers are not saved (an interrupted "
                       "run: run the same command with the same --out to finish it)")
    return out


async def rescore(
    app: App,
    run_dir: Path,
    items: Sequence[EvalItem],
    *,
    judges: Sequence[str] = (),
    gates: Sequence[Gate] = (),
) -> Comparison:
    """Rebuild a run's comparison from its saved files (``--from-results``).

    Without ``judges`` no model is called and the comparison equals the saved one bit for
    bit under the same settings; with them, those judges run again on the saved answers
    (their earlier verdicts replaced).

    Raises:
        UsageError: ``run_dir`` holds no run, a judge is unknown or has no model, the run
            is retrieval-only, or ``pairwise`` has no arm besides the baseline.
    """
    manifest = read_manifest(run_dir)
    unknown = [j for j in judges if j not in JUDGES]
    if unknown:
        raise UsageError(f"unknown judge {unknown[0]!r}; judges: {', '.join(JUDGES)}",
                         field="--judge")  # fmt: skip
    if judges and manifest.retrieval_only:
        raise UsageError("judges read answers and the run is retrieval-only", field="--judge")
    _check_pairwise(judges, manifest.arms, manifest.baseline)
    if judges:
        judge, same = app.judge_model()
        if judge is None:
            raise UsageError("judges need a model: set evaluation.judge (or llm)",
                             field="--judge")  # fmt: skip
        rows = saved_rows(run_dir / RESULTS)
        answer_models = {manifest.answer_model}
        manifest.judge_model = judge.model_id
        manifest.judge_is_answer_model = same or judge.model_id in answer_models
        manifest.judges = sorted(set(manifest.judges) | set(judges))
        await run_judges(app, judge, manifest, items, rows, run_dir, replace=True,
                         only=list(judges))  # fmt: skip
        write_manifest(run_dir, manifest)
    return _compare(app, manifest, items, gates, run_dir)


def _bare_id(model: ChatModel | None) -> str | None:
    """A model's id without its endpoint (``openai:gpt-4o@http://…`` → ``openai:gpt-4o``)."""
    return None if model is None else model.model_id.split("@", 1)[0]
