"""Ranking the communities selected entities belong to (``domain/graph/membership.py``)."""

from __future__ import annotations

import pytest

from unified_kg_rag.domain.graph.membership import member_communities
from unified_kg_rag.domain.models import Community

pytestmark = pytest.mark.unit


def _c(cid: str, level: int, *members: str) -> Community:
    return Community(id=cid, level=level, member_ids=members)


# level 0 (top): A = {a, b, c, d}, B = {e, f}; level 1: A1 = {a, b}, A2 = {c, d};
# level 2: A1x = {a} (A1 split once more)
HIERARCHY = [
    _c("A", 0, "a", "b", "c", "d"), _c("B", 0, "e", "f"),
    _c("A1", 1, "a", "b"), _c("A2", 1, "c", "d"), _c("A1x", 2, "a"),
]
RANK = {"A": 9.0, "B": 1.0, "A1": 5.0, "A2": 6.0, "A1x": 2.0}


def test_each_entitys_deepest_community_comes_before_the_parents() -> None:
    # a's deepest is A1x, b's is A1 (tier 0 both); A1 is also a's parent (tier 1 for a, but
    # the lowest tier counts); A is tier 1 for b, tier 2 for a -> tier 1
    assert member_communities(HIERARCHY, ["a", "b"], RANK) == ["A1", "A1x", "A"]


def test_more_matched_entities_first_then_report_rank() -> None:
    # tier 0: A1x (a), A2 (c, d: 2 matches), B (e); A2 first; A1x and B hold one each: the
    # higher report rank (2 > 1) first; tier 1: A1, A (A holds three: first)
    assert member_communities(HIERARCHY, ["a", "c", "d", "e"], RANK) == [
        "A2", "A1x", "B", "A", "A1"]


def test_communities_without_a_report_are_skipped() -> None:
    rank = {k: v for k, v in RANK.items() if k != "A1x"}
    # a's deepest reported community is then A1 (tier 0), A tier 1
    assert member_communities(HIERARCHY, ["a"], rank) == ["A1", "A"]


def test_no_selected_entity_in_a_reported_community_gives_nothing() -> None:
    assert member_communities(HIERARCHY, ["zz"], RANK) == []
    assert member_communities(HIERARCHY, [], RANK) == []
    assert member_communities([], ["a"], RANK) == []
