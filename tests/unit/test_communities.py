import itertools
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from unified_kg_rag.domain.graph.communities import community_id, detect_communities
from unified_kg_rag.domain.models import Community
from unified_kg_rag.util.errors import UsageError
from unified_kg_rag.util.hashing import sha256_text

pytestmark = pytest.mark.unit

Edge = tuple[str, str, float]


def clique(prefix: str, n: int, weight: float = 1.0) -> tuple[list[str], list[Edge]]:
    nodes = [f"{prefix}{i:02d}" for i in range(n)]
    return nodes, [(a, b, weight) for a, b in itertools.combinations(nodes, 2)]


def dense_graph(n: int = 200, p: float = 0.3, seed: int = 7) -> tuple[list[str], list[Edge]]:
    rng = random.Random(seed)
    nodes = [f"n{i:03d}" for i in range(n)]
    edges = [
        (a, b, float(rng.randint(1, 10)))
        for a, b in itertools.combinations(nodes, 2)
        if rng.random() < p
    ]
    return nodes, edges


def combined_graph() -> tuple[list[str], list[Edge]]:
    """The dense graph plus two 5-cliques joined by one edge (three components)."""
    nodes, edges = dense_graph()
    a, ea = clique("a", 5)
    b, eb = clique("b", 5)
    return nodes + a + b, [*edges, *ea, *eb, ("a00", "b00", 1.0)]


def check_hierarchy(communities: list[Community], max_cluster_size: int, min_size: int) -> None:
    """The structural invariants every result must satisfy."""
    by_id = {c.id: c for c in communities}
    assert len(by_id) == len(communities)
    for c in communities:
        assert list(c.member_ids) == sorted(c.member_ids)
        assert c.id == community_id(c.level, c.member_ids)
        assert len(c.member_ids) >= min_size
        if c.level == 0:
            assert c.parent_id is None
        else:
            parent = by_id[c.parent_id]  # type: ignore[index]
            assert parent.level == c.level - 1
            assert c.id in parent.children_ids
        if not c.children_ids:
            assert len(c.member_ids) <= max_cluster_size
            continue
        assert len(c.member_ids) > max_cluster_size
        assert len(c.children_ids) >= 2  # a parent identical to its only child never exists
        children = [by_id[k] for k in c.children_ids]
        sizes = [len(k.member_ids) for k in children]
        assert sizes == sorted(sizes, reverse=True)
        union = [m for k in children for m in k.member_ids]
        assert sorted(union) == list(c.member_ids)  # disjoint, and covering the parent
    level0 = [m for c in communities if c.level == 0 for m in c.member_ids]
    assert len(level0) == len(set(level0))


def test_two_cliques_joined_by_one_edge_give_two_level0_communities() -> None:
    a, ea = clique("a", 5)
    b, eb = clique("b", 5)
    communities = detect_communities(a + b, [*ea, *eb, ("a00", "b00", 1.0)])
    assert [(c.level, c.member_ids) for c in communities] == sorted(
        [(0, tuple(a)), (0, tuple(b))], key=lambda lm: community_id(*lm)
    )
    for c in communities:
        assert c.parent_id is None
        assert c.children_ids == ()
        assert c.id == sha256_text("community", "0", *c.member_ids)


def test_edges_between_a_pair_add_their_weights() -> None:
    a, ea = clique("a", 4)
    b, eb = clique("b", 4)
    base = [*ea, *eb, ("a00", "b00", 1.0), ("x", "b01", 2.0)]
    # Three relationships x-a01 (two directions, repeated) sum to 3 > 2: x joins the a clique.
    summed = detect_communities(
        [*a, *b, "x"], [*base, ("x", "a01", 1.0), ("a01", "x", 1.0), ("x", "a01", 1.0)]
    )
    single = detect_communities([*a, *b, "x"], [*base, ("x", "a01", 1.0)])
    assert sorted(c.member_ids for c in summed) == [(*a, "x"), tuple(b)]
    assert sorted(c.member_ids for c in single) == [tuple(a), (*b, "x")]


def test_self_loops_unknown_ids_and_bad_weights() -> None:
    a, ea = clique("a", 5)
    b, eb = clique("b", 5)
    edges = [*ea, *eb, ("a00", "b00", 1.0)]
    expected = detect_communities(a + b, edges)
    noisy = [*edges, ("a00", "a00", 100.0), ("a01", "ghost", 100.0), ("ghost", "b02", 5.0)]
    assert detect_communities(a + b, noisy) == expected
    # A weight that is zero, negative or NaN counts as 1, like the clean graph's weights.
    bad = [(s, t, w) for (s, t, _), w in zip(edges, itertools.cycle([0.0, -3.0, float("nan")]))]
    assert detect_communities(a + b, bad) == expected


def test_oversize_communities_are_split_on_a_dense_graph() -> None:
    nodes, edges = dense_graph()
    communities = detect_communities(nodes, edges, max_cluster_size=20)
    check_hierarchy(communities, 20, 3)
    assert max(c.level for c in communities) >= 1
    assert sorted(m for c in communities if c.level == 0 for m in c.member_ids) == nodes


@pytest.mark.parametrize(
    ("nodes", "edges"),
    [
        clique("k", 30),  # modularity at resolution 1 keeps a clique whole
        (["hub", *(f"l{i:02d}" for i in range(45))], [("hub", f"l{i:02d}", 1.0) for i in range(45)]),
    ],
    ids=["clique30", "star45"],
)
def test_groups_leiden_cannot_split_still_fit(nodes: list[str], edges: list[Edge]) -> None:
    communities = detect_communities(nodes, edges, max_cluster_size=20)
    check_hierarchy(communities, 20, 3)
    top = [c for c in communities if c.level == 0]
    assert [len(c.member_ids) for c in top] == [len(nodes)]
    assert len(top[0].children_ids) == -(-len(nodes) // 20)


def test_components_smaller_than_min_size_get_no_community() -> None:
    tri, etri = clique("t", 3)
    nodes = [*tri, "p0", "p1", "lonely"]
    edges = [*etri, ("p0", "p1", 4.0)]
    assert [c.member_ids for c in detect_communities(nodes, edges)] == [tuple(tri)]
    with_pairs = detect_communities(nodes, edges, min_community_size=2)
    assert sorted(c.member_ids for c in with_pairs) == [("p0", "p1"), tuple(tri)]
    assert detect_communities(nodes, edges, min_community_size=4) == []


def test_small_leiden_communities_join_a_neighbour() -> None:
    rng = random.Random(3)
    nodes = [f"s{i:03d}" for i in range(300)]
    edges = [(rng.choice(nodes), rng.choice(nodes), 1.0) for _ in range(330)]
    for min_size in (3, 5):
        check_hierarchy(detect_communities(nodes, edges, min_community_size=min_size), 20, min_size)


@pytest.mark.parametrize(
    ("nodes", "edges"),
    [([], []), (["a"], []), (["a", "b", "c"], []), (["a"], [("a", "a", 1.0)]), ([], [("a", "b", 1.0)])],
    ids=["no-entities", "one-node", "no-edges", "self-loop-only", "edges-to-unknown-ids"],
)
def test_degenerate_graphs_have_no_communities(nodes: list[str], edges: list[Edge]) -> None:
    assert detect_communities(nodes, edges) == []


def test_max_levels_caps_the_depth() -> None:
    nodes, edges = dense_graph()
    capped = detect_communities(nodes, edges, max_levels=1)
    assert {c.level for c in capped} == {0}
    assert all(c.children_ids == () for c in capped)
    assert max(len(c.member_ids) for c in capped) > 20
    full = detect_communities(nodes, edges)
    assert [c for c in full if c.level == 0 and not c.children_ids] == [
        c for c in capped if len(c.member_ids) <= 20
    ]


@pytest.mark.parametrize(
    "kwargs", [{"max_cluster_size": 1}, {"min_community_size": 0}, {"max_levels": 0}]
)
def test_bad_parameters_raise(kwargs: dict[str, int]) -> None:
    with pytest.raises(UsageError):
        detect_communities(["a", "b"], [("a", "b", 1.0)], **kwargs)


_CHILD = """
import json, random, sys
sys.path.insert(0, sys.argv[1])
from test_communities import combined_graph
from unified_kg_rag.domain.graph.communities import detect_communities
nodes, edges = combined_graph()
rng = random.Random(int(sys.argv[2]))
edges = [(t, s, w) if rng.random() < 0.5 else (s, t, w) for s, t, w in edges]
rng.shuffle(edges)
rng.shuffle(nodes)
print(json.dumps([c.model_dump(mode="json") for c in detect_communities(nodes, edges)]))
"""


def test_same_graph_gives_same_communities_in_any_process() -> None:
    outputs = []
    for hash_seed, order_seed in (("1", "11"), ("2", "22")):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(Path(__file__).parent), order_seed],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) > 10
    here = detect_communities(*combined_graph())
    assert [c.model_dump(mode="json") for c in here] == outputs[0]
