"""Running the LLM judges over a run's saved answers (``--judge``), saving each verdict.

- ``correctness``: each answer against the item's reference answers (``judge/correctness``:
  1, 0.5 or 0); answerable items with references only.
- ``pairwise``: each arm's answer against the baseline's for the same question and repeat,
  on GraphRAG's criteria, both orders asked (``pairwise/<criterion>``: 1 win, 0.5 tie,
  0 loss, None when the orders disagree); a pair with one failed answer goes to the other
  side unjudged (seed 000 §9).
- ``assertions``: the item's assertions labelled supported / contradicted / absent, majority
  over ``evaluation.assertion_trials`` trials (``assertion/recall``,
  ``assertion/contradiction_rate``, ``assertion/negative_violation_rate``).

A failed or malformed verdict is saved with its error and its scores None: counted in the
comparison's ``judge_failures``, never silently dropped, never a tie or a 0.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from pathlib import Path

from unified_kg_rag.domain.prompts.library import PromptLibrary
from unified_kg_rag.evaluation.app import EvalApp as App
from unified_kg_rag.evaluation.dataset import EvalItem
from unified_kg_rag.evaluation.judges.assertions import judge_assertions
from unified_kg_rag.evaluation.judges.correctness import judge_correctness
from unified_kg_rag.evaluation.judges.pairwise import (
    decided_without_judge,
    judge_pairwise,
    pairwise_scores,
)
from unified_kg_rag.evaluation.results import (
    CLOSED_BOOK,
    JUDGEMENTS,
    JudgementRow,
    ResultRow,
    RunManifest,
    append_jsonl,
    repair_jsonl,
    saved_judgements,
)
from unified_kg_rag.ports import ChatModel

__all__ = ["JUDGES", "run_judges"]

JUDGES = ("correctness", "pairwise", "assertions")


async def run_judges(
    app: App,
    judge: ChatModel,
    manifest: RunManifest,
    items: Sequence[EvalItem],
    rows: Sequence[ResultRow],
    run_dir: Path,
    *,
    replace: bool,
    only: Sequence[str] | None = None,
) -> int:
    """Judge the saved answers with ``manifest.judges`` (or ``only``); return verdicts written.

    Verdicts already saved are kept and not asked again, unless ``replace``: then the saved
    verdicts of the judges run are dropped first (a re-judge).
    """
    path = run_dir / JUDGEMENTS
    wanted = list(only if only is not None else manifest.judges)
    repair_jsonl(path, JudgementRow)
    saved = saved_judgements(path)
    if replace:
        kept = [j for j in saved if j.judge not in wanted]
        tmp = run_dir / f".{JUDGEMENTS}.tmp"
        tmp.write_text("".join(j.model_dump_json() + "\n" for j in kept), encoding="utf-8")
        tmp.replace(path)
        saved = kept
    # a failed verdict is asked again (its new row, appended, is the one that counts)
    done = {(j.judge, j.question_id, j.arm, j.repeat) for j in saved if j.error is None}
    cfg = app.config.evaluation
    # one bound for every call, taken before each call's deadline starts (a call queued
    # behind others must not time out while it waits)
    sem = asyncio.Semaphore(cfg.judge_concurrency)
    by_id = {i.id: i for i in items}
    by_key = {r.key: r for r in rows}
    tasks: list[Awaitable[JudgementRow]] = []
    for row in rows:
        item = by_id.get(row.question_id)
        if item is None or not row.ok or row.answer is None:
            continue
        if ("correctness" in wanted and item.answerable and item.answers
                and ("correctness", item.id, row.arm, row.repeat) not in done):
            tasks.append(_correctness(judge, item, row, cfg.judge_timeout_s, sem, app.prompts))
        if ("assertions" in wanted and item.assertions
                and ("assertions", item.id, row.arm, row.repeat) not in done):
            tasks.append(_assertions(judge, item, row, cfg.assertion_trials, manifest.seed,
                                     cfg.judge_timeout_s, sem, app.prompts))
    if "pairwise" in wanted:
        for row in rows:
            item = by_id.get(row.question_id)
            base = by_key.get((row.question_id, manifest.baseline, row.repeat))
            if (item is None or base is None or row.arm in (manifest.baseline, CLOSED_BOOK)
                    or ("pairwise", item.id, row.arm, row.repeat) in done):
                continue
            tasks.append(_pairwise(judge, item, row, base, cfg.judge_timeout_s, sem, app.prompts))
    written = 0
    for finished in asyncio.as_completed(tasks):
        append_jsonl(path, await finished)
        written += 1
    return written


async def _correctness(
    judge: ChatModel, item: EvalItem, row: ResultRow, timeout_s: float, sem: asyncio.Semaphore,
    prompts: PromptLibrary,
) -> JudgementRow:
    v = await judge_correctness(judge, item.question, item.answers, row.answer or "",
                                timeout_s=timeout_s, semaphore=sem, prompts=prompts)  # fmt: skip
    return JudgementRow(judge="correctness", question_id=item.id, arm=row.arm,
                        repeat=row.repeat, model=judge.model_id, verdict=v.model_dump(),
                        scores={"judge/correctness": v.score}, error=v.error)  # fmt: skip


async def _assertions(
    judge: ChatModel, item: EvalItem, row: ResultRow, trials: int, seed: int, timeout_s: float,
    sem: asyncio.Semaphore, prompts: PromptLibrary,
) -> JudgementRow:  # fmt: skip
    v = await judge_assertions(judge, item.question, row.answer or "", item.assertions,
                               trials=trials, seed=seed, question_id=item.id,
                               timeout_s=timeout_s, semaphore=sem, prompts=prompts)  # fmt: skip
    scores: dict[str, float | None] = {
        "assertion/recall": v.assertion_recall,
        "assertion/contradiction_rate": v.contradiction_rate,
        "assertion/negative_violation_rate": v.negative_violation_rate,
    }
    return JudgementRow(judge="assertions", question_id=item.id, arm=row.arm,
                        repeat=row.repeat, model=judge.model_id, verdict=v.model_dump(),
                        scores=scores,
                        error=("; ".join(v.errors) or "no successful trial") if v.failed
                        else None)  # fmt: skip


async def _pairwise(
    judge: ChatModel, item: EvalItem, row: ResultRow, base: ResultRow, timeout_s: float,
    sem: asyncio.Semaphore, prompts: PromptLibrary,
) -> JudgementRow:  # fmt: skip
    if not base.ok or not (base.answer or "").strip() or not (row.answer or "").strip():
        v = decided_without_judge(
            question_id=item.id, candidate_arm=row.arm, baseline_arm=base.arm,
            candidate_failed=not (row.answer or "").strip(),
            baseline_failed=not (base.ok and (base.answer or "").strip()),
        )  # fmt: skip
    else:
        v = await judge_pairwise(judge, item.question, row.answer or "", base.answer or "",
                                 question_id=item.id, candidate_arm=row.arm,
                                 baseline_arm=base.arm, timeout_s=timeout_s,
                                 semaphore=sem, prompts=prompts)  # fmt: skip
    return JudgementRow(judge="pairwise", question_id=item.id, arm=row.arm, baseline=base.arm,
                        repeat=row.repeat, model=judge.model_id, verdict=v.model_dump(),
                        scores={f"pairwise/{k}": s for k, s in pairwise_scores(v).items()},
                        error=v.error)  # fmt: skip
