"""The pairwise judge: which of two answers is better, per criterion, in both orders.

The criteria are those of the GraphRAG and LightRAG papers (comprehensiveness, diversity,
empowerment, directness). One call per order judges all criteria (prompt
``judge_pairwise.v1``): first the candidate is shown as "Answer 1", then the baseline is.
Each order's labels are mapped back to the arms; a criterion's verdict keeps a winner only
when both orders agree, and records whether they did (``consistent``), so a judge that
prefers a position shows up as inconsistency rather than as ties (seed 000 §9). A pair with
one failed or empty answer goes to the other side without a call (`decided_without_judge`).

Not here: the summary over many pairs (`judges.pairwise_summary`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Literal

from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.evaluation.judges.common import (
    JudgeError,
    Verdict,
    call_json,
    normalize_label,
    one_line,
    render_prompt,
)
from unified_kg_rag.ports import ChatModel

__all__ = [
    "CRITERIA",
    "CRITERION_DEFINITIONS",
    "PAIRWISE_PROMPT",
    "CriterionVerdict",
    "PairwiseVerdict",
    "Side",
    "decided_without_judge",
    "judge_pairwise",
    "pairwise_scores",
    "parse_pairwise_reply",
]

PAIRWISE_PROMPT = "judge_pairwise.v1"
"""The packaged prompt template (`PromptLibrary.get`; overridable)."""

CRITERIA = ("comprehensiveness", "diversity", "empowerment", "directness")
"""The default criteria (GraphRAG, arXiv 2404.16130 §3.4; LightRAG, arXiv 2410.05779 §4.1)."""

CRITERION_DEFINITIONS: Mapping[str, str] = {
    "comprehensiveness": "how much detail the answer gives to cover every aspect of the question",
    "diversity": "how varied and rich the answer is in the perspectives and insights it offers",
    "empowerment": "how well the answer helps the reader understand the topic and make "
    "informed judgements about it",
    "directness": "how specifically and clearly the answer addresses the question",
}
"""One-line definition of each known criterion, shown to the judge."""

Side = Literal["candidate", "baseline", "tie"]
_ANSWER_LABELS = ("1", "2", "tie")
_SCORE: Mapping[Side, float] = {"candidate": 1.0, "tie": 0.5, "baseline": 0.0}
_TOKENS = EstimateTokenCounter()


class CriterionVerdict(Verdict):
    """One criterion's judgement of a pair, in both orders.

    Attributes:
        winner: the side both orders chose; None when they disagree or the pair failed.
        first_order: the side chosen with the candidate shown first (None: not judged).
        second_order: the side chosen with the baseline shown first (None: not judged).
        consistent: both orders were judged and chose the same side (True, too, for a pair
            decided without a call).
        first_reason: the judge's reason in the first order ("" when none).
        second_reason: the judge's reason in the second order ("" when none).
    """

    winner: Side | None = None
    first_order: Side | None = None
    second_order: Side | None = None
    consistent: bool = False
    first_reason: str = ""
    second_reason: str = ""


class PairwiseVerdict(Verdict):
    """The pairwise judgement of one question's two answers.

    Attributes:
        question_id: the question's id.
        candidate: the candidate arm's name (a strategy, or ``closed_book``).
        baseline: the baseline arm's name.
        criteria: criterion -> its verdict, in the order judged.
        candidate_tokens: the candidate answer's estimated tokens
            (`domain.text.tokens.EstimateTokenCounter`, script-aware).
        baseline_tokens: the baseline answer's estimated tokens.
        judged: False when the pair was decided without a judge call (a failed or empty
            answer).
        error: why the judgement failed (an order's call failed or was malformed); None
            when it succeeded.
    """

    question_id: str = ""
    candidate: str = "candidate"
    baseline: str = "baseline"
    criteria: dict[str, CriterionVerdict]
    candidate_tokens: int = 0
    baseline_tokens: int = 0
    judged: bool = True
    error: str | None = None

    @property
    def failed(self) -> bool:
        """True when the judgement failed (no winner on any criterion)."""
        return self.error is not None


def pairwise_scores(verdict: PairwiseVerdict) -> dict[str, float | None]:
    """Return the candidate's score per criterion: 1 win, 0.5 tie, 0 loss.

    For a paired bootstrap over queries. None for a criterion whose orders disagreed, and for
    every criterion of a failed verdict.
    """
    return {
        name: None if verdict.failed or c.winner is None else _SCORE[c.winner]
        for name, c in verdict.criteria.items()
    }


def parse_pairwise_reply(
    reply: Mapping[str, object], criteria: Sequence[str]
) -> dict[str, tuple[str, str]]:
    """Read one order's reply: per criterion ``"1"``, ``"2"`` or ``"tie"`` and a reason.

    Each criterion's entry is ``{"winner": ..., "reason": ...}`` or the bare label; keys and
    labels are read case-blind, and ``"Answer 1"`` reads as ``"1"``.

    Args:
        reply: the reply's JSON object.
        criteria: the criteria asked for.

    Returns:
        criterion -> (label ``"1"``/``"2"``/``"tie"``, reason or "").

    Raises:
        JudgeError: ``malformed reply: ...`` when a criterion is missing or its label is not
            one of ``1``, ``2``, ``tie``.
    """
    entries = {normalize_label(k): v for k, v in reply.items()}
    out: dict[str, tuple[str, str]] = {}
    for name in criteria:
        if name not in entries:
            raise JudgeError(f"malformed reply: no verdict for '{name}'")
        entry = entries[name]
        raw, reason = entry, ""
        if isinstance(entry, Mapping):
            raw = entry.get("winner")
            given = entry.get("reason")
            reason = one_line(given) if isinstance(given, str) else ""
        label = normalize_label(raw).removeprefix("answer_")
        if label not in _ANSWER_LABELS:
            raise JudgeError(f"malformed reply: '{name}' winner {one_line(repr(raw), 40)} "
                             "is not 1, 2 or tie")  # fmt: skip
        out[name] = (label, reason)
    return out


def decided_without_judge(
    *,
    candidate_failed: bool,
    baseline_failed: bool,
    question_id: str = "",
    candidate_arm: str = "candidate",
    baseline_arm: str = "baseline",
    criteria: Sequence[str] = CRITERIA,
    candidate_tokens: int = 0,
    baseline_tokens: int = 0,
) -> PairwiseVerdict:
    """Return the verdict of a pair with a failed (or empty) answer, decided without a call.

    The other side wins every criterion; when both answers failed, every criterion is a tie
    (neither is better). The verdict is order-consistent and ``judged`` is False, so it counts
    in win rates but not in position consistency or the length analysis.

    Raises:
        ValueError: neither answer failed (the pair needs the judge).

    Source: seed 000 §9 ("a pair with one failed answer goes to the other side unjudged").
    """
    if not (candidate_failed or baseline_failed):
        raise ValueError("decided_without_judge needs a failed answer on at least one side")
    side: Side = "tie" if candidate_failed and baseline_failed else (
        "baseline" if candidate_failed else "candidate")  # fmt: skip
    verdict = CriterionVerdict(winner=side, consistent=True)
    return PairwiseVerdict(
        question_id=question_id,
        candidate=candidate_arm,
        baseline=baseline_arm,
        criteria=dict.fromkeys(criteria, verdict),
        candidate_tokens=candidate_tokens,
        baseline_tokens=baseline_tokens,
        judged=False,
    )


async def judge_pairwise(
    model: ChatModel,
    question: str,
    candidate: str,
    baseline: str,
    *,
    question_id: str = "",
    candidate_arm: str = "candidate",
    baseline_arm: str = "baseline",
    criteria: Sequence[str] = CRITERIA,
    candidate_failed: bool = False,
    baseline_failed: bool = False,
    timeout_s: float = 60.0,
    semaphore: asyncio.Semaphore | None = None,
    prompts: PromptLibrary = PACKAGED,
) -> PairwiseVerdict:
    """Judge the candidate answer against the baseline on each criterion, in both orders.

    The two orders' calls run concurrently. A criterion's winner is kept when both orders
    chose the same side after mapping "1"/"2" back to the arms; otherwise it is None and the
    criterion is inconsistent. A failed or malformed order fails the whole verdict
    (``error`` names the order and the reason); the other order's labels are still recorded.

    Args:
        model: the judge model.
        question: the question.
        candidate: the candidate arm's answer.
        baseline: the baseline arm's answer.
        question_id: the question's id, recorded.
        candidate_arm: the candidate arm's name, recorded.
        baseline_arm: the baseline arm's name, recorded.
        criteria: the criteria to judge (names of `CRITERION_DEFINITIONS`).
        candidate_failed: the candidate's answer failed: decided without a call.
        baseline_failed: the baseline's answer failed: decided without a call.
        timeout_s: longest wait for each order's reply, seconds.
        semaphore: bounds the judge calls in flight across pairs; waiting for it is not
            counted against ``timeout_s`` (`call_json`).
        prompts: the prompts in effect (default: the packaged ones).

    Returns:
        The verdict. A blank answer counts as failed (`decided_without_judge`).

    Raises:
        ValueError: ``criteria`` is empty, repeats a name or names an unknown criterion.

    Source: GraphRAG (arXiv 2404.16130 §3.4) and LightRAG (arXiv 2410.05779 §4.1) criteria;
    both orders and position consistency: seed 000 §9.
    """
    names = _check_criteria(criteria)
    c_tokens, b_tokens = _TOKENS.count(candidate), _TOKENS.count(baseline)
    if candidate_failed or baseline_failed or not candidate.strip() or not baseline.strip():
        return decided_without_judge(
            candidate_failed=candidate_failed or not candidate.strip(),
            baseline_failed=baseline_failed or not baseline.strip(),
            question_id=question_id, candidate_arm=candidate_arm, baseline_arm=baseline_arm,
            criteria=names, candidate_tokens=c_tokens, baseline_tokens=b_tokens,
        )  # fmt: skip
    first, second = await asyncio.gather(
        _judge_order(model, question, candidate, baseline, names, timeout_s, semaphore,
                     prompts),
        _judge_order(model, question, baseline, candidate, names, timeout_s, semaphore,
                     prompts),
    )
    errors = [f"{which} order: {r.reason}" for which, r in (("first", first), ("second", second))
              if isinstance(r, JudgeError)]  # fmt: skip
    verdicts: dict[str, CriterionVerdict] = {}
    for name in names:
        one = None if isinstance(first, JudgeError) else first[name]
        two = None if isinstance(second, JudgeError) else second[name]
        a = None if one is None else _side(one[0], candidate_first=True)
        b = None if two is None else _side(two[0], candidate_first=False)
        consistent = not errors and a == b
        verdicts[name] = CriterionVerdict(
            winner=a if consistent else None, first_order=a, second_order=b,
            consistent=consistent, first_reason=one[1] if one else "",
            second_reason=two[1] if two else "",
        )  # fmt: skip
    return PairwiseVerdict(
        question_id=question_id, candidate=candidate_arm, baseline=baseline_arm,
        criteria=verdicts, candidate_tokens=c_tokens, baseline_tokens=b_tokens,
        error="; ".join(errors) if errors else None,
    )  # fmt: skip


async def _judge_order(
    model: ChatModel,
    question: str,
    answer_1: str,
    answer_2: str,
    criteria: Sequence[str],
    timeout_s: float,
    semaphore: asyncio.Semaphore | None,
    prompts: PromptLibrary,
) -> dict[str, tuple[str, str]] | JudgeError:
    """One order's call: the labels per criterion, or the failure (returned, not raised)."""
    shape = ", ".join(f'"{c}": {{"winner": "1" | "2" | "tie", "reason": "..."}}' for c in criteria)
    system, user = render_prompt(
        PAIRWISE_PROMPT,
        prompts=prompts,
        criteria="\n".join(f"- {c}: {CRITERION_DEFINITIONS[c]}" for c in criteria),
        reply_shape=shape,
        question=question.strip(),
        answer_1=answer_1.strip(),
        answer_2=answer_2.strip(),
    )
    try:
        reply = await call_json(model, system, user, timeout_s=timeout_s, max_tokens=1024,
                                semaphore=semaphore)  # fmt: skip
        return parse_pairwise_reply(reply, criteria)
    except JudgeError as exc:
        return exc


def _side(label: str, *, candidate_first: bool) -> Side:
    """Map an order's ``"1"``/``"2"``/``"tie"`` back to the arm it stood for."""
    if label == "tie":
        return "tie"
    return "candidate" if (label == "1") == candidate_first else "baseline"


def _check_criteria(criteria: Sequence[str]) -> list[str]:
    names = list(criteria)
    if not names:
        raise ValueError("judge_pairwise needs at least one criterion")
    unknown = [c for c in names if c not in CRITERION_DEFINITIONS]
    if unknown:
        raise ValueError(f"unknown pairwise criterion {unknown[0]!r}; known: "
                         f"{', '.join(CRITERION_DEFINITIONS)}")  # fmt: skip
    if len(set(names)) != len(names):
        raise ValueError("judge_pairwise criteria repeat a name")
    return names
