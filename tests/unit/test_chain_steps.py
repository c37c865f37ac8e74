"""The chain's shared steps: fusion, rerank, MMR, quotas, typed packing, abstention."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_kg_rag.config.models import QueryConfig
from unified_kg_rag.domain.answers.abstention import detect_abstention
from unified_kg_rag.domain.ranking.budget import pack_typed
from unified_kg_rag.domain.ranking.mmr import jaccard, mmr_order
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.retrieval.context import (
    fuse,
    pack_context,
    rerank_and_diversify,
    seat_pinned,
)
from unified_kg_rag.retrieval.strategies.base import Bucket, Candidate, StrategyResult
from unified_kg_rag.util.errors import ModelError

pytestmark = pytest.mark.unit

COUNTER = EstimateTokenCounter()


def cand(kind: str, id_: str, text: str | None = None) -> Candidate:
    return Candidate(kind=kind, id=id_, text=text or f"{kind} {id_} text", score=0.0)


def test_one_bucket_keeps_its_order() -> None:
    items = [cand("text_unit", i) for i in "cab"]
    assert [c.id for c in fuse([Bucket("x", items)], rrf_k=10)] == ["c", "a", "b"]


def test_fusion_rewards_agreement_and_respects_weights() -> None:
    a = Bucket("a", [cand("text_unit", "1"), cand("text_unit", "2"), cand("text_unit", "3")])
    b = Bucket("b", [cand("text_unit", "3"), cand("text_unit", "4")], weight=1.0)
    fused = [c.id for c in fuse([a, b], rrf_k=10)]
    # "3" is in both lists: 1/13 + 1/11 beats "1" at 1/11 alone
    assert fused[0] == "3" and fused[1] == "1"
    heavy = Bucket("b", b.candidates, weight=5.0)
    assert [c.id for c in fuse([a, heavy], rrf_k=10)][:2] == ["3", "4"]


def test_same_id_of_two_kinds_stays_two_candidates() -> None:
    fused = fuse([Bucket("a", [cand("entity", "x")]), Bucket("b", [cand("report", "x")])], 10)
    assert sorted(c.kind for c in fused) == ["entity", "report"]


def test_zero_weight_and_empty_buckets_are_ignored() -> None:
    assert fuse([Bucket("a", [], 1.0), Bucket("b", [cand("text_unit", "1")], 0.0)], 10) == []


class ReverseReranker:
    """Scores texts by their position reversed (the last text is the most relevant)."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail
        self.seen: list[list[str]] = []

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        self.seen.append(list(texts))
        if self.fail is not None:
            raise self.fail
        return [float(i) for i in range(len(texts))]


def test_rerank_reorders_the_top_n_of_each_kind_and_keeps_the_tail() -> None:
    ranked = [cand("text_unit", str(i)) for i in range(6)] + [cand("entity", "e1"), cand("entity", "e2")]
    config = QueryConfig.model_validate({"top_k": 10, "rerank": {"top_n": 3}})
    meta: dict[str, object] = {}
    reranker = ReverseReranker()
    groups = asyncio.run(rerank_and_diversify("q", ranked, config, reranker, meta))
    assert [c.id for c in groups["text_unit"]] == ["2", "1", "0", "3", "4", "5"]
    assert [c.id for c in groups["entity"]] == ["e2", "e1"]
    assert meta["rerank"] == {"text_unit": "reranked 3", "entity": "reranked 2"}


def test_rerank_failure_keeps_fused_order_unless_required_or_fatal() -> None:
    ranked = [cand("text_unit", str(i)) for i in range(3)]
    meta: dict[str, object] = {}
    config = QueryConfig()
    groups = asyncio.run(rerank_and_diversify(
        "q", ranked, config, ReverseReranker(ModelError("boom", status_code=500)), meta))
    assert [c.id for c in groups["text_unit"]] == ["0", "1", "2"]
    assert "failed" in str(meta["rerank"])
    required = QueryConfig.model_validate({"rerank": {"required": True}})
    with pytest.raises(ModelError):
        asyncio.run(rerank_and_diversify(
            "q", ranked, required, ReverseReranker(ModelError("boom")), {}))
    with pytest.raises(ModelError):
        asyncio.run(rerank_and_diversify(
            "q", ranked, config, ReverseReranker(ModelError("denied", status_code=401)), {}))


def test_quotas_cut_each_type() -> None:
    ranked = [cand("text_unit", str(i)) for i in range(8)] + [
        cand("report", f"r{i}") for i in range(9)
    ]
    config = QueryConfig.model_validate({"top_k": 4, "quotas": {"report": 2}})
    groups = asyncio.run(rerank_and_diversify("q", ranked, config, None, {}))
    assert [c.id for c in groups["text_unit"]] == ["0", "1", "2", "3"]
    assert [c.id for c in groups["report"]] == ["r0", "r1"]


def test_pinned_candidates_are_seated_after_the_best_ones_within_the_quota() -> None:
    config = QueryConfig.model_validate({"top_k": 4})
    units = [cand("text_unit", str(i)) for i in range(4)]
    groups = {"text_unit": units, "entity": [cand("entity", "e")]}
    pins = [cand("text_unit", "p"), cand("text_unit", "1")]
    three = [*pins, cand("text_unit", "q")]

    def ids(after: int, pinned: list[Candidate] = pins) -> list[str]:
        return [c.id for c in seat_pinned(groups, pinned, config, after)["text_unit"]]

    assert ids(0) == ["p", "1", "0", "2"]  # first, in their order; "1" not twice
    assert ids(1) == ["0", "p", "1", "2"]
    assert ids(2) == ["0", "1", "p", "2"]  # "1" already among the best two keeps its place
    assert ids(9) == ["0", "1", "p", "2"]  # the quota leaves room for both pinned ones
    assert ids(2, three) == ["0", "p", "1", "q"]  # fewer keep their places: the pinned fit
    assert ids(2, []) == ["0", "1", "2", "3"]
    assert seat_pinned(groups, pins, config, 2)["entity"] == groups["entity"]


def test_mmr_pushes_a_near_duplicate_down() -> None:
    ranked = [
        cand("text_unit", "a", "Warsaw is the capital of Poland"),
        cand("text_unit", "b", "Warsaw is the capital of Poland indeed"),
        cand("text_unit", "c", "The Vistula flows to the Baltic Sea"),
    ]
    off = asyncio.run(rerank_and_diversify("q", ranked, QueryConfig(), None, {}))
    on = asyncio.run(rerank_and_diversify(
        "q", ranked, QueryConfig.model_validate({"mmr_lambda": 0.5}), None, {}))
    assert [c.id for c in off["text_unit"]] == ["a", "b", "c"]
    assert [c.id for c in on["text_unit"]] == ["a", "c", "b"]


@given(st.lists(st.frozensets(st.sampled_from("abcdef")), max_size=8), st.floats(0, 1))
@settings(max_examples=60, deadline=None)
def test_mmr_is_a_permutation(terms: list[frozenset[str]], lam: float) -> None:
    order = mmr_order(terms, lam)
    assert sorted(order) == list(range(len(terms)))
    if terms:
        assert order[0] == 0  # the best item always goes first
    assert jaccard(frozenset(), frozenset()) == 0.0


def test_pack_typed_splits_by_share_and_lends_unused_budget() -> None:
    texts = {"text_unit": ["word " * 100] * 5, "entity": ["x " * 10]}
    packed = pack_typed(texts, {"text_unit": 0.5, "entity": 0.5}, 400, COUNTER)
    used = sum(p.tokens for group in packed.values() for p in group)
    assert used <= 400
    # the entity type needs ~10 tokens of its 200; the rest goes to the text units
    assert sum(p.tokens for p in packed["text_unit"]) > 300
    assert len(packed["entity"]) == 1


@given(
    st.dictionaries(
        st.sampled_from(["text_unit", "entity", "relationship", "report"]),
        st.lists(st.integers(1, 120).map(lambda n: "w " * n), max_size=6),
    ),
    st.integers(0, 2000),
)
@settings(max_examples=80, deadline=None)
def test_pack_typed_never_exceeds_the_budget(texts: dict[str, list[str]], budget: int) -> None:
    shares = {"text_unit": 0.55, "entity": 0.2, "relationship": 0.15, "report": 0.1}
    packed = pack_typed(texts, shares, budget, COUNTER)
    assert sum(p.tokens for group in packed.values() for p in group) <= budget
    for kind, group in packed.items():
        # within a type, sections keep their rank order and only the last may be cut
        assert [p.index for p in group] == list(range(len(group)))
        assert all(not p.truncated for p in group[:-1])
        assert kind in texts


def test_context_order_and_numbering() -> None:
    result = StrategyResult(synthesized=[cand("key_points", "kp", "Point one.")])
    groups = {
        "text_unit": [cand("text_unit", "t1"), cand("text_unit", "t2")],
        "entity": [cand("entity", "e1")],
        "report": [cand("report", "r1")],
        "relationship": [cand("relationship", "x1")],
    }
    sources = pack_context(result, groups, QueryConfig(), COUNTER)
    assert [(s.n, s.kind, s.id) for s in sources] == [
        (1, "key_points", "kp"), (2, "report", "r1"), (3, "entity", "e1"),
        (4, "relationship", "x1"), (5, "text_unit", "t1"), (6, "text_unit", "t2"),
    ]  # fmt: skip


def test_abstention_marker_detection() -> None:
    assert detect_abstention("[NO_ANSWER] Nothing about 1903.") == (True, "Nothing about 1903.")
    assert detect_abstention("**［NO_ANSWER］** Nada.") == (True, "Nada.")
    assert detect_abstention("  [no_answer]: missing") == (True, "missing")
    assert detect_abstention("Paris [1]. [NO_ANSWER]") == (False, "Paris [1]. [NO_ANSWER]")
