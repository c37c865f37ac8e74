"""Global search's pure steps (`domain.answers.global_map`): cuts, map replies, ratings, packing."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_kg_rag.domain.answers.global_map import (
    CutChoice,
    DynamicWalk,
    KeyPoint,
    RankedPoint,
    choose_cut,
    format_batch,
    hierarchy_cut,
    pack_batches,
    pack_points,
    parse_map_reply,
    parse_rating,
    rank_points,
)
from unified_kg_rag.domain.models import Community
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter

pytestmark = pytest.mark.unit

# name -> (level, parent, members); members of a parent = union of its children's
TREE: dict[str, tuple[int, str | None, tuple[str, ...]]] = {
    "A": (0, None, ("e1", "e2", "e3", "e4", "e5")),
    "B": (0, None, ("e6",)),
    "C": (0, None, ("e7", "e8")),
    "A1": (1, "A", ("e1", "e2", "e3")),
    "A2": (1, "A", ("e4", "e5")),
    "C1": (1, "C", ("e7", "e8")),
    "A1a": (2, "A1", ("e1", "e2")),
    "A1b": (2, "A1", ("e3",)),
}
ENTITIES = {f"e{i}" for i in range(1, 9)}


def hierarchy(tree: dict[str, tuple[int, str | None, tuple[str, ...]]]) -> list[Community]:
    return [
        Community(id=name, level=level, member_ids=members, parent_id=parent,
                  children_ids=tuple(k for k, v in tree.items() if v[1] == name))
        for name, (level, parent, members) in tree.items()
    ]  # fmt: skip


def members_of(cut: list[Community]) -> Counter[str]:
    return Counter(m for c in cut for m in c.member_ids)


# --- the cut --------------------------------------------------------------------------------


def test_cut_is_the_level_plus_the_leaves_above_it() -> None:
    comms = hierarchy(TREE)
    assert {c.id for c in hierarchy_cut(comms, 0)} == {"A", "B", "C"}
    assert {c.id for c in hierarchy_cut(comms, 1)} == {"A1", "A2", "B", "C1"}
    assert {c.id for c in hierarchy_cut(comms, 2)} == {"A1a", "A1b", "A2", "B", "C1"}
    assert {c.id for c in hierarchy_cut(comms, 9)} == {"A1a", "A1b", "A2", "B", "C1"}


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_each_entity_is_covered_once(level: int) -> None:
    counts = members_of(hierarchy_cut(hierarchy(TREE), level))
    assert set(counts) == ENTITIES
    assert set(counts.values()) == {1}


def test_a_community_whose_children_are_missing_is_a_leaf() -> None:
    comms = [c for c in hierarchy(TREE) if c.id != "C1"]
    assert {c.id for c in hierarchy_cut(comms, 1)} == {"A1", "A2", "B", "C"}


@st.composite
def random_tree(draw: st.DrawFn) -> list[Community]:
    entities = [f"x{i}" for i in range(draw(st.integers(1, 30)))]
    comms: list[Community] = []

    def split(name: str, level: int, parent: str | None, members: list[str]) -> None:
        kids: list[str] = []
        if len(members) > 1 and level < 4 and draw(st.booleans()):
            cuts = sorted(draw(st.sets(st.integers(1, len(members) - 1), min_size=1, max_size=3)))
            parts = [members[a:b] for a, b in zip([0, *cuts], [*cuts, len(members)], strict=True)]
            for i, part in enumerate(parts):
                kids.append(f"{name}.{i}")
                split(kids[-1], level + 1, name, part)
        comms.append(Community(id=name, level=level, member_ids=tuple(members),
                               parent_id=parent, children_ids=tuple(kids)))  # fmt: skip

    tops = sorted(draw(st.sets(st.integers(1, len(entities)), max_size=3)) - {len(entities)})
    bounds = list(zip([0, *tops], [*tops, len(entities)], strict=True))
    for i, (a, b) in enumerate(bounds):
        split(f"t{i}", 0, None, entities[a:b])
    return comms


@settings(max_examples=60, deadline=None)
@given(random_tree(), st.integers(0, 6), st.integers(1, 20))
def test_random_hierarchies_cover_once_and_respect_the_cap(
    comms: list[Community], level: int, cap: int
) -> None:
    entities = {m for c in comms if c.level == 0 for m in c.member_ids}
    counts = members_of(hierarchy_cut(comms, level))
    assert set(counts) == entities and set(counts.values()) == {1}
    choice = choose_cut(comms, None, cap)
    assert len(choice.community_ids) <= cap or (choice.capped and choice.level == 0)
    if not choice.capped:
        deeper = hierarchy_cut(comms, choice.level + 1)
        deepest = max(c.level for c in comms)
        assert choice.level == deepest or len(deeper) > cap


def test_choose_cut_takes_the_deepest_cut_that_fits() -> None:
    comms = hierarchy(TREE)
    assert choose_cut(comms, None, 10).level == 2
    assert set(choose_cut(comms, None, 5).community_ids) == {"A1a", "A1b", "A2", "B", "C1"}
    assert choose_cut(comms, None, 4) == CutChoice(level=1, community_ids=("B", "A1", "A2", "C1"))
    assert choose_cut(comms, None, 3).level == 0


def test_a_configured_cut_over_the_cap_gives_way_to_a_shallower_one() -> None:
    comms = hierarchy(TREE)
    assert choose_cut(comms, 2, 4).level == 1
    assert choose_cut(comms, 2, 3).level == 0
    assert choose_cut(comms, 1, 10).level == 1
    assert choose_cut(comms, 0, 10).level == 0
    assert choose_cut(comms, 9, 10).level == 2  # clamped to the deepest level


def test_when_no_cut_fits_the_cut_is_capped() -> None:
    comms = hierarchy(TREE)
    top = choose_cut(comms, None, 2)
    assert top.capped and top.level == 0 and set(top.community_ids) == {"A", "B", "C"}
    configured = choose_cut(comms, 2, 2)
    assert configured.capped and configured.level == 2 and len(configured.community_ids) == 5
    assert not choose_cut(comms, None, 3).capped


def test_no_communities_give_an_empty_cut() -> None:
    assert choose_cut([], None, 5) == CutChoice(level=0, community_ids=())


# --- map replies ----------------------------------------------------------------------------

POINTS = {"points": [{"description": "Warsaw is the capital.", "score": 80, "reports": [2]}]}


def test_fenced_json_is_read() -> None:
    reply = f"```json\n{json.dumps(POINTS, indent=2)}\n```"
    assert parse_map_reply(reply, 3) == [KeyPoint("Warsaw is the capital.", 80.0, (2,))]


def test_prose_around_the_object_and_reasoning_blocks_are_skipped() -> None:
    decoy = json.dumps({"points": [{"description": "draft", "score": 1, "reports": [1]}]})
    reply = f"<think>{decoy}</think>Here you go: {json.dumps(POINTS)} Hope it helps {{-}}."
    assert parse_map_reply(reply, 2) == [KeyPoint("Warsaw is the capital.", 80.0, (2,))]


def test_scores_are_read_clamped_or_the_point_skipped() -> None:
    raw = [
        {"description": "string score", "score": "85", "reports": [1]},
        {"description": "too high", "score": 150, "reports": [1]},
        {"description": "negative", "score": -5, "reports": [1]},
        {"description": "words", "score": "high", "reports": [1]},
        {"description": "boolean", "score": True, "reports": [1]},
        {"description": "missing", "reports": [1]},
        {"description": "  ", "score": 50, "reports": [1]},
        "not an object",
    ]
    points = parse_map_reply(json.dumps({"points": raw}), 1)
    assert points is not None
    assert [(p.description, p.score) for p in points] == [
        ("string score", 85.0), ("too high", 100.0), ("negative", 0.0)
    ]


def test_out_of_range_ordinals_are_dropped_and_none_left_credits_the_batch() -> None:
    raw = [
        {"description": "mixed", "score": 50, "reports": [0, 2, 9, "3", 2, 1.5]},
        {"description": "all invalid", "score": 50, "reports": [7, -1]},
        {"description": "no reports key", "score": 50},
        {"description": "a bare number", "score": 50, "reports": 2},
    ]
    points = parse_map_reply(json.dumps({"points": raw}), 3)
    assert points is not None
    assert [p.ordinals for p in points] == [(2, 3), (1, 2, 3), (1, 2, 3), (2,)]


@pytest.mark.parametrize(
    "reply", ["", "   ", "I could not find anything.", '{"answer": 1}', '{"points": "none"}',
              '[{"description": "x", "score": 5}]', '{"points": [']
)
def test_unreadable_replies_give_none(reply: str) -> None:
    assert parse_map_reply(reply, 2) is None


def test_a_readable_reply_without_points_is_empty_not_unreadable() -> None:
    assert parse_map_reply('{"points": []}', 2) == []


@pytest.mark.parametrize(
    ("reply", "rating"),
    [("7", 7), ("Rating: 8/10", 8), ("15", 10), ("0", 1), ("7.6", 8), ("-3", 1),
     ("<think>maybe 2</think> 9", 9), ("none", None), ("", None)],
)
def test_rating_is_the_first_number_clamped(reply: str, rating: int | None) -> None:
    assert parse_rating(reply) == rating


# --- batches and points ---------------------------------------------------------------------


def test_batches_are_packed_in_order_within_the_budget() -> None:
    assert pack_batches([30, 30, 30, 50, 10], 60) == [[0, 1], [2], [3, 4]]
    assert pack_batches([100, 10], 60) == [[0], [1]]
    assert pack_batches([10, 100, 10], 60) == [[0], [1], [2]]
    assert pack_batches([], 60) == []


def test_format_batch_numbers_reports_from_one() -> None:
    text = format_batch(["first report ", "second"])
    assert text == "----- Report 1 -----\nfirst report\n\n----- Report 2 -----\nsecond"


def test_rank_points_drops_at_or_below_the_threshold_and_keeps_ties_in_order() -> None:
    pts = [RankedPoint("a", 40, ("r1",)), RankedPoint("b", 90, ("r2",)),
           RankedPoint("c", 40, ("r3",)), RankedPoint("d", 20, ("r1",))]  # fmt: skip
    assert [p.description for p in rank_points(pts, 20)] == ["b", "a", "c"]
    assert [p.description for p in rank_points(pts, 0)] == ["b", "a", "c", "d"]
    assert rank_points(pts, 90) == []


def test_pack_points_stops_at_the_budget_and_names_the_cited_reports() -> None:
    counter = EstimateTokenCounter()
    pts = [RankedPoint("Warsaw is the capital of Poland.", 90, ("r1", "r2")),
           RankedPoint("The Vistula flows through Warsaw.", 70, ("r2",)),
           RankedPoint("Sourdough needs a starter.", 10, ("r3",))]  # fmt: skip
    titles = {"r1": "Poland", "r2": "Rivers"}
    full, packed = pack_points(pts, counter, 10_000, titles)
    assert packed == pts
    lines = full.splitlines()
    assert lines[1] == "1. (importance 90) Warsaw is the capital of Poland. [reports: Poland; Rivers]"
    assert lines[3].endswith("[reports: r3]")  # no title: the id
    budget = counter.count("\n".join(lines[:3]))
    text, packed = pack_points(pts, counter, budget, titles)
    assert packed == pts[:2] and text == "\n".join(lines[:3])
    assert counter.count(text) <= budget


def test_a_first_point_too_long_is_cut_not_dropped() -> None:
    counter = EstimateTokenCounter()
    long = RankedPoint("word " * 200, 50, ("r1",))
    text, packed = pack_points([long], counter, 40)
    assert packed == [long]
    assert 0 < counter.count(text) <= 40
    assert pack_points([], counter, 40) == ("", [])


# --- dynamic selection ----------------------------------------------------------------------


def test_walk_follows_relevant_children_down_to_the_leaves() -> None:
    walk = DynamicWalk(hierarchy(TREE), threshold=5)
    assert walk.frontier() == ["A", "B", "C"]
    walk.record({"A": 8, "B": 2, "C": 6})
    assert walk.frontier() == ["A1", "A2", "C1"]
    walk.record({"A1": 7, "A2": 3, "C1": 4})
    assert walk.frontier() == ["A1a", "A1b"]
    walk.record({"A1a": 9, "A1b": 1})
    assert walk.frontier() == []
    # a relevant child replaces its parent; C stays (its child was not relevant)
    assert walk.selected() == [("A1a", 9), ("C", 6)]


def test_a_level_without_relevant_reports_makes_the_walk_rate_the_next_level() -> None:
    walk = DynamicWalk(hierarchy(TREE), threshold=5)
    walk.record({"A": 1, "B": 2, "C": 3})
    assert walk.frontier() == ["A1", "A2", "C1"]
    walk.record({"A1": 1, "A2": 1, "C1": 1})
    assert walk.frontier() == ["A1a", "A1b"]
    walk.record({"A1a": 5, "A1b": 4})
    assert walk.frontier() == [] and walk.selected() == [("A1a", 5)]


def test_max_level_bounds_the_whole_level_fallback() -> None:
    walk = DynamicWalk(hierarchy(TREE), threshold=5, max_level=0)
    walk.record({"A": 1, "B": 2, "C": 3})
    assert walk.frontier() == [] and walk.selected() == []


def test_an_unrated_report_is_kept_but_not_followed() -> None:
    walk = DynamicWalk(hierarchy(TREE), threshold=5)
    walk.record({"A": None, "B": 6, "C": 2})
    assert walk.frontier() == []  # B is a leaf; A was not rated
    assert walk.selected() == [("B", 6), ("A", None)]
