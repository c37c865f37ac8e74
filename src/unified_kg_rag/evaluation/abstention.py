"""Abstention scoring: how often a run declines, and whether it declines the right items.

Pure counting over one run's items (seed 000 §9.2, "Scoring"): precision, recall and F1 of
declines against unanswerable items, with coverage, accuracy, selective accuracy and overall
accuracy beside them so a strategy cannot look precise by declining more. A failed answer is
never a decline. Re-exported by `evaluation.metrics`; intervals over queries are
`evaluation.statistics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

__all__ = ["AbstentionCase", "AbstentionStats", "abstention_stats"]


@dataclass(frozen=True)
class AbstentionCase:
    """One answered (or failed) item, as abstention scoring sees it.

    Attributes:
        answerable: the corpus holds the answer (False for an unanswerable benchmark item).
        abstained: the answer declined (``metadata.abstained``).
        failed: the answer failed (an error, no answer); a failure is never a decline, even
            when ``abstained`` is also set.
        correct: the answer metric (EM, F1, ...) on an answerable item, in [0, 1]; None when
            the item has no reference answer. Ignored on unanswerable items.
    """

    answerable: bool
    abstained: bool
    failed: bool
    correct: float | None


class AbstentionStats(BaseModel):
    """Abstention counts and rates over a run (seed 000 §9.2, "Scoring").

    A *decline* is an abstained answer that did not fail; an *answered* item is one neither
    declined nor failed. Rates are None when their denominator is empty.

    Attributes:
        n_answerable: answerable items.
        n_unanswerable: unanswerable items.
        abstained_answerable: declines on answerable items (wrong declines).
        abstained_unanswerable: declines on unanswerable items (right declines).
        failed: failed items, of both kinds.
        precision: right declines over all declines; None with no decline.
        recall: right declines over unanswerable items; None with none.
        f1: harmonic mean of precision and recall (0.0 when both are 0); None when either
            is None.
        coverage: answered answerable items over answerable items; None with none.
        accuracy: mean ``correct`` over answerable items with a reference, a decline or a
            failure scoring 0; None with no such item.
        selective_accuracy: mean ``correct`` over the answered answerable items with a
            reference; None with none.
        overall_accuracy: mean over answerable items with a reference (scored as for
            ``accuracy``) and unanswerable items (1 for a decline, else 0); None without
            unanswerable items.
    """

    model_config = ConfigDict(frozen=True)

    n_answerable: int
    n_unanswerable: int
    abstained_answerable: int
    abstained_unanswerable: int
    failed: int
    precision: float | None
    recall: float | None
    f1: float | None
    coverage: float | None
    accuracy: float | None
    selective_accuracy: float | None
    overall_accuracy: float | None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def abstention_stats(cases: Sequence[AbstentionCase]) -> AbstentionStats:
    """Score declines and answers over a run's items (seed 000 §9.2, "Scoring").

    Coverage and accuracy come together so a strategy cannot look precise by declining
    more, and a failure counts against recall and scores 0 in accuracy, so a strategy cannot
    look better by failing either.

    Args:
        cases: one entry per item (per query and repeat, as the caller aggregates).

    Returns:
        The counts and rates; see `AbstentionStats`.
    """
    answerable = [c for c in cases if c.answerable]
    unanswerable = [c for c in cases if not c.answerable]
    right = sum(1 for c in unanswerable if c.abstained and not c.failed)
    wrong = sum(1 for c in answerable if c.abstained and not c.failed)
    precision = right / (right + wrong) if right + wrong else None
    recall = right / len(unanswerable) if unanswerable else None
    f1: float | None = None
    if precision is not None and recall is not None:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    answered = [c for c in answerable if not c.abstained and not c.failed]
    scored = [
        0.0 if c.abstained or c.failed else c.correct for c in answerable if c.correct is not None
    ]
    declines = [1.0 if c.abstained and not c.failed else 0.0 for c in unanswerable]
    return AbstentionStats(
        n_answerable=len(answerable),
        n_unanswerable=len(unanswerable),
        abstained_answerable=wrong,
        abstained_unanswerable=right,
        failed=sum(1 for c in cases if c.failed),
        precision=precision,
        recall=recall,
        f1=f1,
        coverage=len(answered) / len(answerable) if answerable else None,
        accuracy=_mean(scored),
        selective_accuracy=_mean([c.correct for c in answered if c.correct is not None]),
        overall_accuracy=_mean(scored + declines) if unanswerable else None,
    )
