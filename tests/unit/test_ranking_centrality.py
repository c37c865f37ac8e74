"""Global PageRank (`domain.ranking.centrality`): hand-computed values, networkx, determinism."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from unified_kg_rag.domain.ranking.centrality import (
    global_pagerank,
    graph_digest,
    unit_pagerank,
)


def test_a_path_of_three_matches_the_hand_computed_values() -> None:
    # a = 0.05 + 0.85 b / 2, b = 0.05 + 0.85 (a + c), a = c  =>  a = 19/74, b = 36/74
    result = global_pagerank(["a", "b", "c"], [("a", "b", 1.0), ("c", "b", 1.0)])
    assert result.values == pytest.approx({"a": 19 / 74, "b": 36 / 74, "c": 19 / 74}, abs=1e-9)
    assert (result.nodes, result.edges, result.converged) == (3, 2, True)
    assert result.max_value == pytest.approx(36 / 74, abs=1e-9)


def test_weights_split_the_hub_mass_as_computed_by_hand() -> None:
    # star c-a (1), c-b (3): c = 18/37, a = 0.05 + 0.85 c / 4, b = 0.05 + 0.85 * 3 c / 4
    result = global_pagerank([], [("c", "a", 1.0), ("b", "c", 3.0)])
    assert result.values == pytest.approx(
        {"a": 227 / 1480, "b": 533 / 1480, "c": 720 / 1480}, abs=1e-9
    )


def test_parallel_edges_add_up_and_an_isolated_node_shares_its_mass_uniformly() -> None:
    summed = global_pagerank(["d"], [("c", "a", 1.0), ("b", "c", 1.0), ("c", "b", 2.0)])
    single = global_pagerank(["d"], [("c", "a", 1.0), ("b", "c", 3.0)])
    assert summed.values == single.values and summed.edges == 2
    reference = nx.Graph()
    reference.add_node("d")
    reference.add_weighted_edges_from([("c", "a", 1.0), ("b", "c", 3.0)])
    expected = nx.pagerank(reference, alpha=0.85, tol=1e-13, max_iter=1000)
    assert single.values == pytest.approx(expected, abs=1e-9)
    assert sum(single.values.values()) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", [1, 7, 23])
def test_a_random_weighted_graph_matches_networkx(seed: int) -> None:
    rng = random.Random(seed)
    graph = nx.gnm_random_graph(120, 300, seed=seed)
    edges = [(f"n{u}", f"n{v}", rng.uniform(0.5, 9.0)) for u, v in graph.edges()]
    reference = nx.Graph()
    reference.add_nodes_from(f"n{n}" for n in graph.nodes())  # isolated nodes included
    reference.add_weighted_edges_from(edges)
    expected = nx.pagerank(reference, alpha=0.85, weight="weight", tol=1e-13, max_iter=1000)
    result = global_pagerank(reference.nodes(), edges)
    assert result.converged and result.nodes == 120 and result.edges == 300
    assert result.values == pytest.approx(expected, abs=1e-9)


def test_the_same_graph_in_any_order_gives_identical_values_and_digest() -> None:
    rng = random.Random(5)
    edges = [(f"n{rng.randrange(40)}", f"n{rng.randrange(40)}", rng.uniform(1, 3))
             for _ in range(90)]  # fmt: skip
    lineage = [(f"n{i}", (f"u{i % 7}", f"u{i % 5}")) for i in range(40)]
    shuffled = [(t, s, w) for s, t, w in reversed(edges)]
    assert global_pagerank([], edges).values == global_pagerank([], shuffled).values
    assert graph_digest([], edges, lineage) == graph_digest([], shuffled, lineage[::-1])
    heavier = [(s, t, w + 1.0) if i == 0 else (s, t, w) for i, (s, t, w) in enumerate(edges)]
    assert graph_digest([], heavier, lineage) != graph_digest([], edges, lineage)


def test_a_unit_takes_the_largest_value_of_the_nodes_citing_it() -> None:
    values = {"hub": 0.5, "minor": 0.1, "other": 0.2}
    units = unit_pagerank(
        values, [("minor", ("u1", "u2")), ("hub", ("u2",)), ("other", ("u3",)),
                 ("unknown", ("u4",))],
    )  # fmt: skip
    assert units == {"u1": 0.1, "u2": 0.5, "u3": 0.2}


def test_an_empty_graph_has_no_values_and_bad_weights_are_refused() -> None:
    empty = global_pagerank([], [])
    assert empty.values == {} and empty.max_value == 0.0
    with pytest.raises(ValueError, match="weight"):
        global_pagerank([], [("a", "b", -1.0)])
