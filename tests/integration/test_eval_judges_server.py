"""The LLM judges through the real OpenAI adapter against a local OpenAI-compatible server.

The server's reply functions play judges: one that always prefers "Answer 1" (position
bias), a fair one, and malformed, slow or failing ones.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.support.openai_server import FakeOpenAIServer, Scripted

from unified_kg_rag.adapters.llm.middleware import wrap_chat_model
from unified_kg_rag.adapters.llm.openai import OpenAIChatModel
from unified_kg_rag.config.models import LLMConfig, OpenAIChatConfig
from unified_kg_rag.evaluation.dataset import Assertion
from unified_kg_rag.evaluation.judges import (
    CRITERIA,
    PairwiseVerdict,
    judge_assertions,
    judge_correctness,
    judge_pairwise,
    summarize_pairwise,
)
from unified_kg_rag.ports import ChatModel

pytestmark = pytest.mark.integration

Reply = Callable[[dict[str, Any]], str]


def user_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def biased(body: dict[str, Any]) -> str:
    """A judge that always prefers the answer shown first."""
    return json.dumps({c: {"winner": "1", "reason": "first is better"} for c in CRITERIA})


def fair(body: dict[str, Any]) -> str:
    """A judge that prefers the answer saying GOOD on every criterion but directness (a tie)."""
    first = re.search(r"<answer_1>(.*?)</answer_1>", user_text(body), re.S)
    side = "1" if first is not None and "GOOD" in first.group(1) else "2"
    return json.dumps({c: {"winner": "tie" if c == "directness" else side} for c in CRITERIA})


@pytest.fixture
def judge_server(request: pytest.FixtureRequest) -> Iterator[FakeOpenAIServer]:
    reply: Reply = getattr(request, "param", fair)
    with FakeOpenAIServer(reply=reply) as server:
        yield server


def judge_model(server: FakeOpenAIServer) -> ChatModel:
    raw = OpenAIChatModel(OpenAIChatConfig(base_url=server.base_url, api_key="k",
                                           model="judge", timeout_s=10.0))  # fmt: skip
    return wrap_chat_model(raw, LLMConfig(max_retries=0, retry_initial_s=0.0), None)


def judge_pairs(server: FakeOpenAIServer, pairs: list[tuple[str, str, str]],
                timeout_s: float = 10.0) -> list[PairwiseVerdict]:  # fmt: skip
    model = judge_model(server)

    async def run() -> list[PairwiseVerdict]:
        return list(await asyncio.gather(*(
            judge_pairwise(model, f"Question {qid}?", cand, base, question_id=qid,
                           candidate_arm="local", baseline_arm="naive", timeout_s=timeout_s)
            for qid, cand, base in pairs
        )))  # fmt: skip

    return asyncio.run(run())


PAIRS = [
    ("q1", "GOOD: the long and careful answer.", "A short one."),
    ("q2", "GOOD too.", "Something else entirely, at more length than the other."),
    ("q3", "GOOD, third time.", "Meh."),
]


@pytest.mark.parametrize("judge_server", [biased], indirect=True)
def test_a_position_biased_judge_is_inconsistent_not_tied(
    judge_server: FakeOpenAIServer,
) -> None:
    verdicts = judge_pairs(judge_server, PAIRS)
    for v in verdicts:
        assert v.error is None and v.judged
        for c in v.criteria.values():
            assert (c.first_order, c.second_order) == ("candidate", "baseline")
            assert (c.winner, c.consistent) == (None, False)
            assert (c.first_reason, c.second_reason) == ("first is better", "first is better")
    summary = summarize_pairwise(verdicts)
    for name in CRITERIA:
        row = summary.criteria[name]
        assert (row.judged, row.inconsistent, row.failed) == (3, 3, 0)
        assert (row.wins, row.losses, row.ties) == (0, 0, 0)
        assert row.position_consistency == 0.0
        assert row.win_rate is None
    requests = judge_server.requests_to("/chat/completions")
    assert len(requests) == 6  # two orders per pair
    for qid, cand, base in PAIRS:
        shown = [user_text(r.body) for r in requests if f"Question {qid}?" in user_text(r.body)]
        firsts = sorted(s.index(cand) < s.index(base) for s in shown)
        assert firsts == [False, True]  # once each way round
    assert {r.body["temperature"] for r in requests} == {0.0}


def test_a_fair_judge_is_consistent(judge_server: FakeOpenAIServer) -> None:
    verdicts = judge_pairs(judge_server, PAIRS)
    for v in verdicts:
        assert (v.question_id[0], v.candidate, v.baseline, v.error) == ("q", "local", "naive", None)
        assert v.criteria["comprehensiveness"].winner == "candidate"
        assert v.criteria["directness"].winner == "tie"
        assert all(c.consistent for c in v.criteria.values())
    # GOOD : the long and care-ful ans-wer . = 10; A short one . = 4 (estimated tokens)
    assert (verdicts[0].candidate_tokens, verdicts[0].baseline_tokens) == (10, 4)
    summary = summarize_pairwise(verdicts)
    assert summary.criteria["comprehensiveness"].win_rate == 1.0
    assert summary.criteria["directness"].win_rate == 0.5
    assert {r.position_consistency for r in summary.criteria.values()} == {1.0}


def test_malformed_verdicts_fail_their_pairs_with_reasons(judge_server: FakeOpenAIServer) -> None:
    unknown = {c: "1" for c in CRITERIA} | {"comprehensiveness": {"winner": "Answer 3"}}
    missing = {c: "2" for c in CRITERIA if c != "empowerment"}
    judge_server.script(
        Scripted(match="Question bad-json?", reply="Answer 1 is clearly better.", times=1),
        Scripted(match="Question bad-label?", reply=json.dumps(unknown), times=1),
        Scripted(match="Question bad-keys?", reply=f"```json\n{json.dumps(missing)}\n```", times=2),
    )
    pairs = [(qid, "GOOD answer.", "Other answer.") for qid in ("ok", "bad-json", "bad-label",
                                                                "bad-keys")]  # fmt: skip
    verdicts = {v.question_id: v for v in judge_pairs(judge_server, pairs)}
    assert verdicts["ok"].error is None
    assert re.fullmatch(r"(first|second) order: malformed reply: no JSON object",
                        verdicts["bad-json"].error or "")  # fmt: skip
    assert re.fullmatch(r"(first|second) order: malformed reply: 'comprehensiveness' winner "
                        r"'Answer 3' is not 1, 2 or tie", verdicts["bad-label"].error or "")  # fmt: skip
    assert verdicts["bad-keys"].error == (
        "first order: malformed reply: no verdict for 'empowerment'; "
        "second order: malformed reply: no verdict for 'empowerment'"
    )
    for qid in ("bad-json", "bad-label", "bad-keys"):
        assert all(c.winner is None for c in verdicts[qid].criteria.values())
    summary = summarize_pairwise(list(verdicts.values()))
    assert (summary.pairs, summary.failed) == (4, 3)
    row = summary.criteria["comprehensiveness"]
    assert (row.failed, row.judged, row.wins, row.win_rate) == (3, 1, 1, 1.0)


def test_a_slow_or_failing_judge_fails_with_a_reason(judge_server: FakeOpenAIServer) -> None:
    judge_server.script(
        Scripted(match="Question slow?", delay_s=3.0, times=2),
        Scripted(match="Question refused?", status=400, message="bad request", times=2),
    )
    pairs = [("slow", "GOOD answer.", "Other."), ("refused", "GOOD answer.", "Other.")]
    slow, refused = judge_pairs(judge_server, pairs, timeout_s=0.5)
    assert slow.error == "first order: deadline; second order: deadline"
    assert refused.error is not None and refused.error.startswith("first order: model error: ")
    assert "second order: model error: " in refused.error
    assert summarize_pairwise([slow, refused]).failed == 2


def test_correctness_through_the_server(judge_server: FakeOpenAIServer) -> None:
    model = judge_model(judge_server)
    judge_server.script(
        Scripted(reply='{"label": "correct", "reason": "Same city."}', times=1),
        Scripted(reply='{"label": "wrong"}', times=1),
        Scripted(delay_s=3.0, times=1),
    )

    async def run() -> list[Any]:
        out = []
        for _ in range(3):  # one at a time: the scripted replies answer in order
            out.append(await judge_correctness(model, "Capital of France?", ["Paris", "paris"],
                                               "It is Paris.", timeout_s=0.5))  # fmt: skip
        return out

    good, bad, slow = asyncio.run(run())
    assert (good.score, good.label, good.reason, good.error) == (1.0, "correct", "Same city.", None)
    assert (bad.score, bad.error) == (None, "malformed reply: label 'wrong' is not one of "
                                            "correct, partially_correct, incorrect")  # fmt: skip
    assert (slow.score, slow.error) == (None, "deadline")
    body = judge_server.requests_to("/chat/completions")[0].body
    assert body["messages"][0]["role"] == "system"
    assert "- Paris\n- paris" in body["messages"][1]["content"]


ASSERTIONS = [
    Assertion(text="Paris is the capital of France."),
    Assertion(text="The Seine flows through Paris."),
    Assertion(text="Paris is in Germany.", kind="negative"),
]


class AssertionJudge:
    """Labels by keyword; the Seine statement is supported on the 2nd call, absent after."""

    def __init__(self) -> None:
        self.calls = 0
        self.orders: list[list[str]] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self._lock:
            self.calls += 1
            calls = self.calls
        block = user_text(body).split("Statements:\n", 1)[1]
        shown = re.findall(r"^(\d+)\. (.+)$", block, re.M)
        self.orders.append([text for _, text in shown])
        labels = []
        for number, text in shown:
            label = ("supported" if "capital" in text else "contradicted" if "Germany" in text
                     else "supported" if calls == 2 else "absent")  # fmt: skip
            labels.append({"id": int(number), "label": label})
        return json.dumps({"labels": labels})


def test_assertion_majority_over_trials_with_one_malformed(openai_server: FakeOpenAIServer) -> None:
    judge = AssertionJudge()
    openai_server.reply = judge
    openai_server.script(Scripted(reply="garbage", times=1))
    model = judge_model(openai_server)
    verdict = asyncio.run(judge_assertions(
        model, "Tell me about Paris.", "Paris is the capital of France.", ASSERTIONS,
        trials=3, seed=0, question_id="q1", max_concurrency=1,
    ))  # fmt: skip
    # trial 1 got "garbage"; trials 2 and 3 split on the Seine: no majority there
    assert verdict.errors == ["trial 1: malformed reply: no JSON object"]
    assert (verdict.trials, verdict.successful_trials, verdict.failed_trials) == (3, 2, 1)
    assert verdict.labels == ["supported", None, "contradicted"]
    assert verdict.assertion_recall == 0.5  # the Seine's missing majority is not supported
    assert verdict.contradiction_rate == 0.0
    assert verdict.negative_violation_rate == 0.0
    assert verdict.failed is False
    assert verdict.distinct_orders == 3
    requests = openai_server.requests_to("/chat/completions")
    shown_orders = {tuple(re.findall(r"^\d+\. (.+)$", user_text(r.body).split("Statements:\n")[1],
                                     re.M)) for r in requests}  # fmt: skip
    assert len(shown_orders) == 3  # each trial its own order, the malformed one included
    assert all(sorted(o) == sorted(a.text for a in ASSERTIONS) for o in shown_orders)


def test_a_query_without_a_successful_trial_is_failed(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(
        Scripted(reply='{"labels": [{"id": 1, "label": "supported"}]}', times=1),
        Scripted(reply='{"labels": [{"id": 1, "label": "maybe"}, {"id": 2, "label": "absent"},'
                       ' {"id": 3, "label": "absent"}]}', times=1),
        Scripted(status=400, times=1),
    )
    verdict = asyncio.run(judge_assertions(
        judge_model(openai_server), "Q?", "An answer.", ASSERTIONS, question_id="q2",
        max_concurrency=1, timeout_s=5.0,
    ))  # fmt: skip
    assert verdict.failed is True
    assert (verdict.successful_trials, verdict.failed_trials) == (0, 3)
    assert verdict.labels == [None, None, None]
    assert (verdict.assertion_recall, verdict.contradiction_rate,
            verdict.negative_violation_rate) == (None, None, None)  # fmt: skip
    assert verdict.errors[:2] == [
        "trial 1: malformed reply: no label for statement 2 and 1 more",
        "trial 2: malformed reply: statement 1 label 'maybe' is not one of supported, "
        "contradicted, absent",
    ]
    assert verdict.errors[2].startswith("trial 3: model error: ")
