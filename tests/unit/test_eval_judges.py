"""The LLM judges' pure parts (`evaluation.judges`): reply parsing, orders, majority, summaries."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Mapping, Sequence

import pytest

from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.evaluation.dataset import Assertion
from unified_kg_rag.evaluation.judges import (
    LENGTH_BUCKETS,
    CriterionVerdict,
    JudgeError,
    PairwiseVerdict,
    Side,
    assertion_orders,
    assertion_scores,
    call_json,
    decided_without_judge,
    judge_assertions,
    judge_correctness,
    judge_pairwise,
    length_bucket,
    majority_labels,
    pairwise_scores,
    summarize_pairwise,
)
from unified_kg_rag.evaluation.judges.assertions import parse_assertion_reply
from unified_kg_rag.evaluation.judges.correctness import parse_correctness_reply
from unified_kg_rag.evaluation.judges.pairwise import parse_pairwise_reply
from unified_kg_rag.evaluation.judges.pairwise_summary import pearson
from unified_kg_rag.util.errors import ModelError

pytestmark = pytest.mark.unit


class CannedModel:
    """A `ChatModel` replying with one text, raising one error, or hanging; counts calls."""

    def __init__(self, text: str = "", *, error: Exception | None = None,
                 hang: bool = False, finish_reason: str = "stop") -> None:  # fmt: skip
        self.text, self.error, self.hang, self.finish_reason = text, error, hang, finish_reason
        self.calls: list[dict[str, object]] = []

    @property
    def model_id(self) -> str:
        return "canned"

    async def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None,
                       temperature: float | None = None, stop: Sequence[str] | None = None,
                       json_schema: Mapping[str, object] | None = None) -> Completion:  # fmt: skip
        self.calls.append({"messages": list(messages), "temperature": temperature})
        if self.hang:
            await asyncio.Event().wait()
        if self.error is not None:
            raise self.error
        return Completion(text=self.text, finish_reason=self.finish_reason)

    async def stream(self, messages: Sequence[Message], *, max_tokens: int | None = None,
                     temperature: float | None = None,
                     stop: Sequence[str] | None = None) -> AsyncIterator[str]:  # fmt: skip
        yield self.text


def reason_of(model: CannedModel, timeout_s: float = 5.0) -> str:
    with pytest.raises(JudgeError) as info:
        asyncio.run(call_json(model, "sys", "user", timeout_s=timeout_s))
    return info.value.reason


# ---------------------------------------------------------------- call_json


def test_call_json_reads_the_object_at_temperature_zero() -> None:
    model = CannedModel('Sure.\n```json\n{"label": "correct"}\n```')
    assert asyncio.run(call_json(model, "sys", "user", timeout_s=5)) == {"label": "correct"}
    [call] = model.calls
    assert call["temperature"] == 0.0
    assert [m.role for m in call["messages"]] == ["system", "user"]  # type: ignore[attr-defined]


def test_call_json_failures_have_one_line_reasons() -> None:
    assert reason_of(CannedModel(hang=True), timeout_s=0.01) == "deadline"
    assert reason_of(CannedModel(error=ModelError("HTTP 400:\n bad  request"))) == (
        "model error: HTTP 400: bad request"
    )
    assert reason_of(CannedModel("I prefer the first.")) == "malformed reply: no JSON object"
    assert reason_of(CannedModel('{"label": "corr', finish_reason="length")) == (
        "malformed reply: no JSON object (cut off at max_tokens)"
    )


def test_waiting_for_the_semaphore_is_not_on_the_clock() -> None:
    async def body() -> dict[str, object]:
        gate = asyncio.Semaphore(1)
        await gate.acquire()  # another judgement holds the only slot past the deadline
        call = asyncio.create_task(call_json(CannedModel('{"ok": 1}'), "", "user",
                                             timeout_s=0.2, semaphore=gate))  # fmt: skip
        await asyncio.sleep(0.3)
        gate.release()
        return await call

    assert asyncio.run(body()) == {"ok": 1}


# ---------------------------------------------------------------- correctness


def test_correctness_reply_labels_read_case_blind() -> None:
    verdict = parse_correctness_reply({"label": "Partially correct", "reason": "only\nhalf"})
    assert (verdict.score, verdict.label, verdict.reason) == (0.5, "partially_correct", "only half")
    assert parse_correctness_reply({"label": "INCORRECT"}).score == 0.0
    with pytest.raises(JudgeError, match="no 'label'"):
        parse_correctness_reply({"verdict": "correct"})
    with pytest.raises(JudgeError, match="label 'maybe' is not one of correct"):
        parse_correctness_reply({"label": "maybe"})


def test_correctness_needs_references_and_grades_an_empty_answer_without_a_call() -> None:
    model = CannedModel('{"label": "correct"}')
    with pytest.raises(ValueError, match="reference"):
        asyncio.run(judge_correctness(model, "Q?", ["  "], "Paris"))
    verdict = asyncio.run(judge_correctness(model, "Q?", ["Paris"], "  \n"))
    assert (verdict.score, verdict.label, verdict.failed) == (0.0, "incorrect", False)
    assert model.calls == []


def test_a_failed_correctness_call_is_no_score() -> None:
    verdict = asyncio.run(judge_correctness(CannedModel("no idea"), "Q?", ["Paris"], "Paris"))
    assert (verdict.score, verdict.label) == (None, None)
    assert verdict.error == "malformed reply: no JSON object"


# ---------------------------------------------------------------- pairwise parsing


def test_pairwise_reply_reads_objects_bare_labels_and_answer_names() -> None:
    reply = {"Comprehensiveness": {"winner": "Answer 1", "reason": " more\n detail "},
             "directness": "tie", "diversity": {"winner": 2}}  # fmt: skip
    assert parse_pairwise_reply(reply, ["comprehensiveness", "directness", "diversity"]) == {
        "comprehensiveness": ("1", "more detail"),
        "directness": ("tie", ""),
        "diversity": ("2", ""),
    }


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"comprehensiveness": "1"}, "no verdict for 'directness'"),
        ({"comprehensiveness": "3", "directness": "1"}, "'comprehensiveness' winner '3' is not"),
        ({"comprehensiveness": {"winner": True}, "directness": "1"}, "winner True is not"),
        ({"comprehensiveness": {"reason": "x"}, "directness": "1"}, "winner None is not"),
    ],
)  # fmt: skip
def test_pairwise_reply_without_a_usable_label_is_malformed(
    reply: dict[str, object], message: str
) -> None:
    with pytest.raises(JudgeError, match=message):
        parse_pairwise_reply(reply, ["comprehensiveness", "directness"])


def test_a_failed_answer_decides_the_pair_without_a_call() -> None:
    model = CannedModel("{}")
    verdict = asyncio.run(judge_pairwise(model, "Q?", "", "a real answer", question_id="q7",
                                         criteria=["directness"]))  # fmt: skip
    assert model.calls == []
    assert verdict.judged is False and verdict.error is None
    assert verdict.criteria["directness"].winner == "baseline"
    assert (verdict.candidate_tokens, verdict.baseline_tokens) == (0, 4)  # a, real, an-swer
    both = decided_without_judge(candidate_failed=True, baseline_failed=True, criteria=["x"])
    assert pairwise_scores(both) == {"x": 0.5}
    other = asyncio.run(judge_pairwise(model, "Q?", "fine", "also fine", baseline_failed=True))
    assert pairwise_scores(other) == dict.fromkeys(
        ("comprehensiveness", "diversity", "empowerment", "directness"), 1.0)  # fmt: skip
    with pytest.raises(ValueError, match="failed answer"):
        decided_without_judge(candidate_failed=False, baseline_failed=False)
    with pytest.raises(ValueError, match="unknown pairwise criterion 'speed'"):
        asyncio.run(judge_pairwise(model, "Q?", "a", "b", criteria=["speed"]))


# ---------------------------------------------------------------- pairwise summary


@pytest.mark.parametrize(
    ("candidate", "baseline", "bucket"),
    [
        (100, 100, "0.91-1.1"), (110, 100, "0.91-1.1"), (100, 110, "0.91-1.1"),
        (111, 100, "1.1-1.5"), (100, 111, "0.67-0.91"), (149, 100, "1.1-1.5"),
        (100, 149, "0.67-0.91"), (150, 100, ">=1.5"), (100, 150, "<=0.67"),
        (0, 0, "0.91-1.1"), (5, 0, ">=1.5"), (0, 5, "<=0.67"),
    ],
)  # fmt: skip
def test_length_buckets_are_symmetric_in_the_log_ratio(
    candidate: int, baseline: int, bucket: str
) -> None:
    assert length_bucket(candidate, baseline) == bucket
    mirror = LENGTH_BUCKETS[len(LENGTH_BUCKETS) - 1 - LENGTH_BUCKETS.index(bucket)]
    assert length_bucket(baseline, candidate) == mirror


def test_pearson() -> None:
    assert pearson([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    # dx = -1, 0, 1; dy = -0.5, 0.5, 0: sxy 0.5, sxx 2, syy 0.5 -> 0.5 / 1
    assert pearson([1, 2, 3], [0, 1, 0.5]) == pytest.approx(0.5)
    assert pearson([1, 2, 3], [1, 1, 1]) is None
    assert pearson([1, 2], [0, 1]) is None


def crit(first: Side, second: Side | None = None) -> CriterionVerdict:
    second = first if second is None else second
    same = first == second
    return CriterionVerdict(winner=first if same else None, first_order=first,
                            second_order=second, consistent=same)  # fmt: skip


def pair(qid: str, c_tokens: int, b_tokens: int, comp: CriterionVerdict,
         direct: CriterionVerdict, error: str | None = None) -> PairwiseVerdict:  # fmt: skip
    return PairwiseVerdict(question_id=qid, candidate="local", baseline="naive",
                           criteria={"comprehensiveness": comp, "directness": direct},
                           candidate_tokens=c_tokens, baseline_tokens=b_tokens,
                           error=error)  # fmt: skip


VERDICTS = [
    pair("q1", 200, 100, crit("candidate"), crit("baseline")),
    pair("q2", 150, 100, crit("candidate"), crit("tie")),
    pair("q3", 100, 100, crit("candidate", "baseline"), crit("tie")),
    pair("q4", 50, 100, crit("baseline"), crit("candidate")),
    pair("q5", 100, 100, CriterionVerdict(), CriterionVerdict(), error="first order: deadline"),
    decided_without_judge(candidate_failed=True, baseline_failed=False, question_id="q6",
                          criteria=["comprehensiveness", "directness"], baseline_tokens=80),
]  # fmt: skip


def test_summary_counts_win_rates_and_position_consistency() -> None:
    summary = summarize_pairwise(VERDICTS)
    assert (summary.pairs, summary.failed, summary.unjudged) == (6, 1, 1)
    comp, direct = summary.criteria["comprehensiveness"], summary.criteria["directness"]
    # comprehensiveness: won q1 q2, lost q4 and q6 (unjudged), q3 inconsistent, q5 failed
    assert (comp.wins, comp.losses, comp.ties, comp.inconsistent) == (2, 2, 0, 1)
    assert (comp.failed, comp.judged, comp.unjudged) == (1, 4, 1)
    assert comp.win_rate == 0.5  # (2 + 0) / 4
    assert comp.position_consistency == 0.75  # 3 of the 4 judged agreed
    # directness: won q4, lost q1 q6, tied q2 q3
    assert (direct.wins, direct.losses, direct.ties, direct.inconsistent) == (1, 2, 2, 0)
    assert direct.win_rate == pytest.approx(0.4)  # (1 + 0.5 * 2) / 5
    assert direct.position_consistency == 1.0


def test_summary_length_block() -> None:
    length = summarize_pairwise(VERDICTS).length
    assert length.pairs == 4  # q1-q4: failed q5 and unjudged q6 left out
    buckets = {b.label: b for b in length.buckets}
    assert [b.label for b in length.buckets] == list(LENGTH_BUCKETS)
    assert [b.pairs for b in length.buckets] == [1, 0, 1, 0, 2]
    assert buckets["<=0.67"].win_rate == {"comprehensiveness": 0.0, "directness": 1.0}
    assert buckets["0.67-0.91"].win_rate == {"comprehensiveness": None, "directness": None}
    assert buckets["0.91-1.1"].decided == {"comprehensiveness": 0, "directness": 1}
    assert buckets["0.91-1.1"].win_rate == {"comprehensiveness": None, "directness": 0.5}
    assert buckets[">=1.5"].win_rate == {"comprehensiveness": 1.0, "directness": 0.25}
    # comprehensiveness over q1 q2 q4: x = 1/3, 1/5, -1/3; y = 1, 1, 0
    # dx = 4/15, 2/15, -6/15; dy = 1/3, 1/3, -2/3 -> r = (2/5) / sqrt(56/225 * 2/3)
    assert length.correlation["comprehensiveness"] == pytest.approx(0.4 * math.sqrt(675 / 112))
    # directness over q1-q4: x = 1/3, 1/5, 0, -1/3; y = 0, .5, .5, 1
    # dx = 17/60, 9/60, -3/60, -23/60; dy = -.5, 0, 0, .5 -> r = (-1/3) / sqrt(908/3600 * .5)
    assert length.correlation["directness"] == pytest.approx(-math.sqrt(7200 / 908) / 3)


def test_pairwise_scores_leave_inconsistent_and_failed_criteria_out() -> None:
    assert pairwise_scores(VERDICTS[2]) == {"comprehensiveness": None, "directness": 0.5}
    assert pairwise_scores(VERDICTS[4]) == {"comprehensiveness": None, "directness": None}
    assert pairwise_scores(VERDICTS[3]) == {"comprehensiveness": 0.0, "directness": 1.0}


def test_an_empty_summary() -> None:
    summary = summarize_pairwise([])
    assert (summary.pairs, summary.criteria, summary.length.correlation) == (0, {}, {})
    assert [b.pairs for b in summary.length.buckets] == [0] * 5


# ---------------------------------------------------------------- assertions


def test_assertion_orders_are_seeded_and_distinct_while_any_is_left() -> None:
    three = assertion_orders(3, 3, seed=0, question_id="q1")
    assert three == assertion_orders(3, 3, seed=0, question_id="q1")
    assert len({tuple(o) for o in three}) == 3
    assert all(sorted(o) == [0, 1, 2] for o in three)
    assert len({tuple(o) for o in assertion_orders(3, 6, seed=5, question_id="x")}) == 6
    two = assertion_orders(2, 3, seed=0, question_id="q1")
    assert {tuple(o) for o in two} == {(0, 1), (1, 0)}
    assert assertion_orders(1, 3, seed=0, question_id="q1") == [[0], [0], [0]]
    others = [assertion_orders(4, 3, seed=s, question_id="q1") for s in range(5)]
    assert len({tuple(map(tuple, o)) for o in others}) > 1  # the seed matters


def test_assertion_reply_forms() -> None:
    as_list = {"labels": [{"id": 2, "label": "Absent"}, {"id": "1", "label": "supported"},
                          {"id": 3, "label": "contradicted", "reason": "says 1990"}]}  # fmt: skip
    assert parse_assertion_reply(as_list, 3) == ["supported", "absent", "contradicted"]
    as_map = {"labels": {"1": "supported", "2": {"label": "absent"}}}
    assert parse_assertion_reply(as_map, 2) == ["supported", "absent"]
    twice = {"labels": [{"id": 1, "label": "absent"}, {"id": 1, "label": "absent"}]}
    assert parse_assertion_reply(twice, 1) == ["absent"]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"verdicts": []}, "no 'labels' list"),
        ({"labels": [{"id": 1, "label": "supported"}]}, "no label for statement 2$"),
        ({"labels": []}, "no label for statement 1 and 1 more"),
        ({"labels": [{"id": 3, "label": "absent"}]}, "unknown statement id 3"),
        ({"labels": [{"id": "²", "label": "absent"}]}, "unknown statement id '²'"),
        ({"labels": [{"label": "absent"}]}, "unknown statement id None"),
        ({"labels": [{"id": 1, "label": "true"}]}, "statement 1 label 'true' is not one of"),
        ({"labels": [{"id": 1, "label": "absent"}, {"id": 1, "label": "supported"}]},
         "statement 1 labelled twice"),
    ],
)  # fmt: skip
def test_malformed_assertion_replies(reply: dict[str, object], message: str) -> None:
    with pytest.raises(JudgeError, match=message):
        parse_assertion_reply(reply, 2)


def test_majority_needs_more_than_half_of_the_successful_trials() -> None:
    trials: list[list[str]] = [
        ["supported", "absent", "contradicted", "supported"],
        ["supported", "contradicted", "contradicted", "absent"],
        ["absent", "absent", "supported", "contradicted"],
    ]
    assert majority_labels(trials, 4) == ["supported", "absent", "contradicted", None]  # type: ignore[arg-type]
    assert majority_labels([["supported"], ["absent"]], 1) == [None]
    assert majority_labels([["absent"], ["absent"]], 1) == ["absent"]
    assert majority_labels([], 2) == [None, None]


def test_assertion_scores_count_a_missing_majority_as_not_supported() -> None:
    labels = ["supported", "contradicted", None, "supported", "absent"]
    kinds = ["positive", "positive", "positive", "negative", "negative"]
    assert assertion_scores(labels, kinds) == (1 / 3, 1 / 3, 0.5)  # type: ignore[arg-type]
    assert assertion_scores(["absent"], ["negative"]) == (None, None, 0.0)
    assert assertion_scores(["supported"], ["positive"]) == (1.0, 0.0, None)


def test_assertions_of_a_blank_answer_are_absent_without_a_call() -> None:
    model = CannedModel("{}")
    items = [Assertion(text="Paris is the capital."), Assertion(text="Lyon is.", kind="negative")]
    verdict = asyncio.run(judge_assertions(model, "Q?", " ", items, question_id="q1"))
    assert model.calls == []
    assert verdict.labels == ["absent", "absent"]
    assert (verdict.trials, verdict.failed) == (0, False)
    assert (verdict.assertion_recall, verdict.contradiction_rate,
            verdict.negative_violation_rate) == (0.0, 0.0, 0.0)  # fmt: skip
    with pytest.raises(ValueError, match="at least one assertion"):
        asyncio.run(judge_assertions(model, "Q?", "A", []))
