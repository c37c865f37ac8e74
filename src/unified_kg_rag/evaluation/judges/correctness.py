"""The correctness judge: does an answer give the reference answer (correct, partly, not)?

One call per answer (`judge_correctness`, prompt ``judge_correctness.v1``) grades a free-text
answer against the item's reference answers, where exact match and token F1 undercount a
right answer in other words (seed 000 §9: the RAGAS-style answer-correctness judge). A
failed call is a verdict with ``error`` set and no score, never a 0.

Not here: the LLM-free answer metrics (`evaluation.metrics`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Literal, get_args

from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
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
    "CORRECTNESS_PROMPT",
    "CorrectnessLabel",
    "CorrectnessVerdict",
    "judge_correctness",
    "parse_correctness_reply",
]

CORRECTNESS_PROMPT = "judge_correctness.v1"
"""The packaged prompt template (`PromptLibrary.get`; overridable)."""

CorrectnessLabel = Literal["correct", "partially_correct", "incorrect"]

_SCORES: dict[CorrectnessLabel, float] = {
    "correct": 1.0,
    "partially_correct": 0.5,
    "incorrect": 0.0,
}
_LABELS: tuple[CorrectnessLabel, ...] = get_args(CorrectnessLabel)


class CorrectnessVerdict(Verdict):
    """One answer's correctness judgement.

    Attributes:
        score: 1.0 correct, 0.5 partially correct, 0.0 incorrect; None when the judgement
            failed.
        label: the judge's label; None when the judgement failed.
        reason: the judge's one-line reason ("" when it gave none or failed).
        error: why the judgement failed (`judges.common` reasons); None when it succeeded.
    """

    score: float | None
    label: CorrectnessLabel | None
    reason: str = ""
    error: str | None = None

    @property
    def failed(self) -> bool:
        """True when the judgement failed (no score)."""
        return self.error is not None


def parse_correctness_reply(reply: Mapping[str, object]) -> CorrectnessVerdict:
    """Read the JSON object of a correctness reply: ``{"label": ..., "reason": ...}``.

    The label is read case-blind with spaces or hyphens for ``_`` (`normalize_label`).

    Raises:
        JudgeError: ``malformed reply: ...`` when ``label`` is missing or not one of
            ``correct``, ``partially_correct``, ``incorrect``.
    """
    if "label" not in reply:
        raise JudgeError("malformed reply: no 'label'")
    label = normalize_label(reply["label"])
    for known in _LABELS:
        if label == known:
            reason = reply.get("reason")
            text = one_line(reason) if isinstance(reason, str) else ""
            return CorrectnessVerdict(score=_SCORES[known], label=known, reason=text)
    raise JudgeError(f"malformed reply: label {one_line(repr(reply['label']), 60)} is not one of "
                     f"{', '.join(_LABELS)}")  # fmt: skip


async def judge_correctness(
    model: ChatModel,
    question: str,
    references: Sequence[str],
    answer: str,
    *,
    timeout_s: float = 60.0,
    semaphore: asyncio.Semaphore | None = None,
    prompts: PromptLibrary = PACKAGED,
) -> CorrectnessVerdict:
    """Grade ``answer`` against the reference answers with one judge call.

    Args:
        model: the judge model (not the answer model: a judge favours its own answers).
        question: the question.
        references: the reference answers; any one counts. Blank ones are ignored.
        answer: the answer to grade. A blank answer is graded incorrect without a call.
        timeout_s: longest wait for the judge's reply, seconds.
        semaphore: bounds the judge calls in flight across answers; waiting for it is not
            counted against ``timeout_s`` (`call_json`).
        prompts: the prompts in effect (default: the packaged ones).

    Returns:
        The verdict; on a failed call, ``score`` and ``label`` None and ``error`` set.

    Raises:
        ValueError: no non-blank reference answer (the caller skips the item).

    Source: seed 000 §9 (answer-correctness judge, three grades as in RAGAS-style graders).
    """
    refs = [r.strip() for r in references if r.strip()]
    if not refs:
        raise ValueError("judge_correctness needs at least one non-blank reference answer")
    if not answer.strip():
        return CorrectnessVerdict(score=0.0, label="incorrect", reason="empty answer")
    system, user = render_prompt(
        CORRECTNESS_PROMPT,
        prompts=prompts,
        question=question.strip(),
        references="\n".join(f"- {r}" for r in refs),
        answer=answer.strip(),
    )
    try:
        return parse_correctness_reply(
            await call_json(model, system, user, timeout_s=timeout_s, max_tokens=512,
                            semaphore=semaphore)
        )
    except JudgeError as exc:
        return CorrectnessVerdict(score=None, label=None, error=exc.reason)
