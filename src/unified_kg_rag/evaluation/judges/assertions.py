"""The assertion judge: which of an item's assertions an answer supports, contradicts or omits.

Per answer and trial, one call (prompt ``judge_assertions.v1``) labels every assertion of the
item ``supported``, ``contradicted`` or ``absent``. Each trial shows the assertions in its own
shuffled order, seeded by (seed, question id, trial), so no assertion gains from its position;
the trials of a query take distinct orders while any is left. An assertion takes the label
that more than half of the query's successful trials gave it (BenchmarkQED's AutoE pass rule);
without such a majority its label is None, which is not assumed to be ``absent``: it counts as
neither supported nor contradicted, so it lowers recall and raises no rate.

Per query (seed 000 §9.3): ``assertion_recall`` (positive assertions labelled supported, over
the positives), ``contradiction_rate`` (positives labelled contradicted, over the positives)
and ``negative_violation_rate`` (negative assertions labelled supported, over the negatives).
A trial whose call fails, or whose reply misses an assertion or uses another label, is a
failed trial; a query with no successful trial is a failed verdict with all three None,
never 0.

Not here: generating assertions (BenchmarkQED's AutoQ side) and running judges over a dataset.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal, get_args

from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.evaluation.dataset import Assertion
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
    "ASSERTIONS_PROMPT",
    "AssertionLabel",
    "AssertionVerdict",
    "assertion_orders",
    "assertion_scores",
    "judge_assertions",
    "majority_labels",
    "parse_assertion_reply",
]

ASSERTIONS_PROMPT = "judge_assertions.v1"
"""The packaged prompt template (`PromptLibrary.get`; overridable)."""

AssertionLabel = Literal["supported", "contradicted", "absent"]
_LABELS: tuple[AssertionLabel, ...] = get_args(AssertionLabel)


class AssertionVerdict(Verdict):
    """One answer's assertion judgement over its trials.

    Attributes:
        question_id: the question's id.
        labels: the majority label of each assertion, in the item's order; None when no
            label won more than half of the successful trials.
        trials: judge calls asked for (0 for a blank answer, judged without a call).
        successful_trials: trials whose reply labelled every assertion.
        failed_trials: trials whose call failed or whose reply was malformed.
        distinct_orders: distinct assertion orders among the trials.
        errors: ``trial N: <reason>`` per failed trial (N from 1).
        assertion_recall: positives labelled supported / positives (None without positives).
        contradiction_rate: positives labelled contradicted / positives.
        negative_violation_rate: negatives labelled supported / negatives (None without
            negatives).
        failed: no trial succeeded; the three scores are then None.
    """

    question_id: str = ""
    labels: list[AssertionLabel | None]
    trials: int
    successful_trials: int
    failed_trials: int
    distinct_orders: int
    errors: list[str]
    assertion_recall: float | None
    contradiction_rate: float | None
    negative_violation_rate: float | None
    failed: bool = False


def assertion_orders(count: int, trials: int, *, seed: int, question_id: str) -> list[list[int]]:
    """Return each trial's display order: a permutation of ``range(count)`` per trial.

    Trial ``t``'s order is a shuffle by `random.Random` seeded with ``"{seed}:{question_id}:{t}"``
    (string seeds hash with SHA-512, so the order is the same in every process). While the
    trials so far have not used all ``count!`` orders, an order already taken is reshuffled
    with the same generator until it is new.

    Args:
        count: the number of assertions.
        trials: the number of trials.
        seed: the run's seed.
        question_id: the question's id.

    Returns:
        ``trials`` lists; ``order[i]`` is the item index of the assertion shown as ``i + 1``.
    """
    total = math.factorial(count)
    taken: set[tuple[int, ...]] = set()
    orders: list[list[int]] = []
    for trial in range(trials):
        rng = random.Random(f"{seed}:{question_id}:{trial}")
        order = list(range(count))
        rng.shuffle(order)
        while tuple(order) in taken and len(taken) < total:
            rng.shuffle(order)
        taken.add(tuple(order))
        orders.append(order)
    return orders


def parse_assertion_reply(reply: Mapping[str, object], count: int) -> list[AssertionLabel]:
    """Read a trial's reply: ``{"labels": [{"id": 1, "label": ...}, ...]}``.

    ``labels`` may also be an object of id -> label (or id -> ``{"label": ...}``). Ids are the
    numbers shown (1 to ``count``, as numbers or numeric text); labels are read case-blind. An
    id given twice with the same label is accepted.

    Returns:
        The label of each shown statement, in display order.

    Raises:
        JudgeError: ``malformed reply: ...`` when ``labels`` is missing, an entry has no id
            or an unknown one, a label is not ``supported``/``contradicted``/``absent``, an id
            gets two labels, or a statement gets none.
    """
    raw = reply.get("labels")
    if isinstance(raw, Mapping):
        entries = [(k, v.get("label") if isinstance(v, Mapping) else v) for k, v in raw.items()]
    elif isinstance(raw, list):
        entries = [(e.get("id"), e.get("label")) if isinstance(e, Mapping) else (None, None)
                   for e in raw]  # fmt: skip
    else:
        raise JudgeError("malformed reply: no 'labels' list")
    found: dict[int, AssertionLabel] = {}
    for key, value in entries:
        number = _statement_number(key, count)
        label = next((x for x in _LABELS if x == normalize_label(value)), None)
        if label is None:
            shown = one_line(repr(value), 40)
            raise JudgeError(f"malformed reply: statement {number} label {shown} is not one "
                             f"of {', '.join(_LABELS)}")  # fmt: skip
        if found.setdefault(number, label) != label:
            raise JudgeError(f"malformed reply: statement {number} labelled twice")
    missing = [i for i in range(1, count + 1) if i not in found]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise JudgeError(f"malformed reply: no label for statement {missing[0]}{more}")
    return [found[i] for i in range(1, count + 1)]


def majority_labels(
    trial_labels: Sequence[Sequence[AssertionLabel]], count: int
) -> list[AssertionLabel | None]:
    """Return each assertion's label given by more than half of the successful trials.

    Args:
        trial_labels: per successful trial, the labels in the item's order.
        count: the number of assertions.

    Returns:
        Per assertion, the strict-majority label, or None without one (or without trials).

    Source: BenchmarkQED AutoE's pass rule (a trial mean above 0.5), seed 000 §9.3.
    """
    out: list[AssertionLabel | None] = []
    for i in range(count):
        votes = Counter(labels[i] for labels in trial_labels)
        top = votes.most_common(1)
        out.append(top[0][0] if top and 2 * top[0][1] > len(trial_labels) else None)
    return out


def assertion_scores(
    labels: Sequence[AssertionLabel | None], kinds: Sequence[str]
) -> tuple[float | None, float | None, float | None]:
    """Return (assertion_recall, contradiction_rate, negative_violation_rate).

    A None label counts in the denominators and in no numerator. Recall and the
    contradiction rate are None without positive assertions, the violation rate without
    negative ones.
    """
    pos = [lab for lab, kind in zip(labels, kinds, strict=True) if kind == "positive"]
    neg = [lab for lab, kind in zip(labels, kinds, strict=True) if kind == "negative"]
    recall = pos.count("supported") / len(pos) if pos else None
    contradiction = pos.count("contradicted") / len(pos) if pos else None
    violation = neg.count("supported") / len(neg) if neg else None
    return recall, contradiction, violation


async def judge_assertions(
    model: ChatModel,
    question: str,
    answer: str,
    assertions: Sequence[Assertion],
    *,
    trials: int = 3,
    seed: int = 0,
    question_id: str = "",
    timeout_s: float = 60.0,
    max_concurrency: int = 4,
    semaphore: asyncio.Semaphore | None = None,
    prompts: PromptLibrary = PACKAGED,
) -> AssertionVerdict:
    """Label an answer's assertions over ``trials`` calls and take the majority per assertion.

    A blank answer supports and contradicts nothing: every assertion is ``absent``, without a
    call (``trials`` 0).

    Args:
        model: the judge model (temperature 0).
        question: the question.
        answer: the answer to check.
        assertions: the item's assertions (positive and negative).
        trials: judge calls (one per shuffled order).
        seed: the run's seed for the orders.
        question_id: the question's id (part of the order seed), recorded.
        timeout_s: longest wait for each call, seconds.
        max_concurrency: calls of this answer in flight at once, when no ``semaphore``.
        semaphore: a semaphore shared with other judgements (all queries' trials sharing
            one concurrency bound); replaces ``max_concurrency``. Waiting for it is not
            counted against ``timeout_s`` (`call_json`).
        prompts: the prompts in effect (default: the packaged ones).

    Returns:
        The verdict (labels, trial counts, the three scores).

    Raises:
        ValueError: no assertions (the caller skips the item), or ``trials`` or
            ``max_concurrency`` below 1.

    Source: seed 000 §9.3 (BenchmarkQED AutoE assertions, one call per trial labelling all).
    """
    if not assertions:
        raise ValueError("judge_assertions needs at least one assertion")
    if trials < 1 or max_concurrency < 1:
        raise ValueError("judge_assertions needs trials and max_concurrency of at least 1")
    count, kinds = len(assertions), [a.kind for a in assertions]
    if not answer.strip():
        labels: list[AssertionLabel | None] = ["absent"] * count
        recall, contradiction, violation = assertion_scores(labels, kinds)
        return AssertionVerdict(
            question_id=question_id, labels=labels, trials=0, successful_trials=0,
            failed_trials=0, distinct_orders=0, errors=[], assertion_recall=recall,
            contradiction_rate=contradiction, negative_violation_rate=violation,
        )  # fmt: skip
    orders = assertion_orders(count, trials, seed=seed, question_id=question_id)
    gate = semaphore if semaphore is not None else asyncio.Semaphore(max_concurrency)

    async def trial(order: list[int]) -> list[AssertionLabel] | JudgeError:
        statements = "\n".join(f"{i}. {' '.join(assertions[k].text.split())}"
                               for i, k in enumerate(order, start=1))  # fmt: skip
        system, user = render_prompt(ASSERTIONS_PROMPT, prompts=prompts, question=question.strip(),
                                     answer=answer.strip(), statements=statements,
                                     count=str(count))  # fmt: skip
        try:
            reply = await call_json(model, system, user, timeout_s=timeout_s,
                                    max_tokens=256 + 48 * count, semaphore=gate)  # fmt: skip
            shown = parse_assertion_reply(reply, count)
        except JudgeError as exc:
            return exc
        labels = [shown[0]] * count
        for position, k in enumerate(order):
            labels[k] = shown[position]
        return labels

    results = await asyncio.gather(*(trial(order) for order in orders))
    good = [r for r in results if not isinstance(r, JudgeError)]
    errors = [f"trial {t}: {r.reason}" for t, r in enumerate(results, start=1)
              if isinstance(r, JudgeError)]  # fmt: skip
    majority = majority_labels(good, count)
    recall, contradiction, violation = (
        assertion_scores(majority, kinds) if good else (None, None, None)
    )
    return AssertionVerdict(
        question_id=question_id, labels=majority, trials=trials, successful_trials=len(good),
        failed_trials=len(errors), distinct_orders=len({tuple(o) for o in orders}),
        errors=errors, assertion_recall=recall, contradiction_rate=contradiction,
        negative_violation_rate=violation, failed=not good,
    )  # fmt: skip


def _statement_number(key: object, count: int) -> int:
    text = str(key).strip() if isinstance(key, str | int) and not isinstance(key, bool) else ""
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= count:
        raise JudgeError(f"malformed reply: unknown statement id {one_line(repr(key), 40)}")
    return int(text)
