"""Fusion laws: promoting an item in one list never lowers its fused score or rank."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unified_kg_rag.domain.ranking.fusion import weighted_rrf

pytestmark = pytest.mark.unit

ids = st.lists(st.sampled_from("abcdefghij"), min_size=1, max_size=10, unique=True)


@given(ids, ids, st.floats(0.0, 3.0), st.floats(0.0, 3.0), st.integers(1, 100))
def test_promotion_is_monotone(l1: list[str], l2: list[str], w1: float, w2: float, k: int) -> None:
    before = dict(weighted_rrf([l1, l2], [w1, w2], k=k))
    item = l1[-1]
    promoted = [item, *[x for x in l1 if x != item]]
    after = dict(weighted_rrf([promoted, l2], [w1, w2], k=k))
    assert after[item] >= before[item] - 1e-12


@given(ids, ids)
def test_fused_items_are_the_union(l1: list[str], l2: list[str]) -> None:
    assert {i for i, _ in weighted_rrf([l1, l2])} == set(l1) | set(l2)


@given(ids, ids, st.integers(1, 100))
def test_scores_are_sorted_descending(l1: list[str], l2: list[str], k: int) -> None:
    scores = [s for _, s in weighted_rrf([l1, l2], k=k)]
    assert scores == sorted(scores, reverse=True)
