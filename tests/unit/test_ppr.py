"""Personalized PageRank core: a hand-derived example, networkx parity, graph building, seeding."""

import math
import random

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from unified_kg_rag.domain.ranking.ppr import (
    PassageGraph,
    build_passage_graph,
    hipporag_reset,
    lexical_seed_weights,
    personalized_pagerank,
    rank_nodes,
    truncation_bound,
)

pytestmark = pytest.mark.unit


def _symmetric(n: int, edges: list[tuple[int, int, float]]) -> sp.csr_matrix:
    rows = [i for i, j, _ in edges] + [j for i, j, _ in edges]
    cols = [j for i, j, _ in edges] + [i for i, j, _ in edges]
    data = [w for _, _, w in edges] * 2
    return sp.csr_matrix((data, (rows, cols)), shape=(n, n), dtype=np.float64)


# ----------------------------------------------------------------------------- hand-computed


def test_weighted_path_with_an_isolated_node_matches_the_hand_derivation() -> None:
    # Nodes a=0, b=1, c=2, z=3; edges a-b (weight 2), b-c (weight 1); z has no edge.
    # Reset (1, 0, 0, 1) -> r = (1/2, 0, 0, 1/2); d = 1/2.
    # Row-normalised P: a->b 1; b->a 2/3, b->c 1/3; c->b 1; z is dangling (D = p_z).
    # Fixed point of p = (1-d) r + d (p P + D r):
    #   p_z = 1/2*1/2 + 1/2*(D*1/2)            = 1/4 + D/4, and D = p_z  =>  p_z = 1/3
    #   p_c = 1/2*(1/3 p_b)                    = p_b / 6
    #   p_b = 1/2*(p_a + p_c) = p_a/2 + p_b/12                           =>  p_b = 6/11 p_a
    #   p_a = 1/4 + 1/2*(2/3 p_b + D/2) = 1/4 + 1/12 + (1/3)(6/11) p_a
    #       = 1/3 + 2/11 p_a                                             =>  p_a = 11/27
    #   so p_b = 6/27, p_c = 1/27, p_z = 9/27 (sum 27/27).
    adjacency = _symmetric(4, [(0, 1, 2.0), (1, 2, 1.0)])
    reset = np.array([1.0, 0.0, 0.0, 1.0])
    result = personalized_pagerank(
        adjacency, reset, damping=0.5, max_iterations=500, tolerance=1e-15
    )
    np.testing.assert_allclose(result.scores, [11 / 27, 6 / 27, 1 / 27, 9 / 27], atol=1e-12)

    # The defaults (30 steps, tolerance 1e-6) converge here; the error shrinks by d a step.
    default = personalized_pagerank(adjacency, reset)
    assert default.converged
    assert default.iterations <= 30
    np.testing.assert_allclose(default.scores, [11 / 27, 6 / 27, 1 / 27, 9 / 27], atol=2e-6)


def test_unweighted_path_reset_on_one_end() -> None:
    # a-b-c, r = a, d = 1/2: p_c = p_b/4, p_b = (p_a + p_c)/2 => p_b = 4/7 p_a;
    # p_a = 1/2 + 1/2 * (p_b/2) = 1/2 + p_a/7 => p_a = 7/12, p_b = 1/3, p_c = 1/12.
    adjacency = _symmetric(3, [(0, 1, 1.0), (1, 2, 1.0)])
    result = personalized_pagerank(
        adjacency, np.array([3.0, 0.0, 0.0]), max_iterations=500, tolerance=1e-15
    )
    np.testing.assert_allclose(result.scores, [7 / 12, 1 / 3, 1 / 12], atol=1e-12)


def test_damping_zero_returns_the_normalised_reset() -> None:
    adjacency = _symmetric(3, [(0, 1, 1.0), (1, 2, 1.0)])
    result = personalized_pagerank(adjacency, np.array([1.0, 3.0, 0.0]), damping=0.0)
    np.testing.assert_allclose(result.scores, [0.25, 0.75, 0.0])
    assert result.converged


def test_max_iterations_caps_the_steps() -> None:
    adjacency = _symmetric(3, [(0, 1, 1.0), (1, 2, 1.0)])
    result = personalized_pagerank(adjacency, np.array([1.0, 0.0, 0.0]), max_iterations=3)
    assert result.iterations == 3
    assert not result.converged
    assert math.isclose(float(result.scores.sum()), 1.0)


# ----------------------------------------------------------------------------- networkx parity


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
def test_agrees_with_networkx_on_random_graphs(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(8, 40)
    isolated = set(rng.sample(range(n), k=max(1, n // 8)))
    pairs: dict[tuple[int, int], float] = {}
    for _ in range(rng.randint(n, 3 * n)):
        i, j = rng.sample([v for v in range(n) if v not in isolated], 2)
        pairs[(min(i, j), max(i, j))] = rng.uniform(0.1, 5.0)
    reset = np.array([rng.random() if rng.random() < 0.4 else 0.0 for _ in range(n)])
    reset[next(iter(isolated))] = 0.5  # an isolated reset node holds its own mass
    damping = rng.choice([0.5, 0.7, 0.85])

    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from((i, j, w) for (i, j), w in pairs.items())
    personalization = {v: float(reset[v]) for v in range(n)}
    expected = nx.pagerank(
        graph,
        alpha=damping,
        personalization=personalization,
        dangling=personalization,
        tol=1e-12,
        max_iter=10_000,
    )
    adjacency = _symmetric(n, [(i, j, w) for (i, j), w in pairs.items()])
    result = personalized_pagerank(
        adjacency, reset, damping=damping, max_iterations=10_000, tolerance=1e-13
    )
    assert result.converged
    np.testing.assert_allclose(result.scores, [expected[v] for v in range(n)], atol=1e-6)


# ----------------------------------------------------------------------------- degenerate input


@pytest.mark.parametrize(
    "reset",
    [[0.0, 0.0, 0.0], [1.0, float("nan"), 0.0], [1.0, -0.5, 1.0], [float("inf"), 0.0, 0.0]],
)
def test_reset_without_usable_mass_gives_zeros(reset: list[float]) -> None:
    adjacency = _symmetric(3, [(0, 1, 1.0), (1, 2, 1.0)])
    result = personalized_pagerank(adjacency, np.array(reset))
    assert result.scores.tolist() == [0.0, 0.0, 0.0]
    assert not np.isnan(result.scores).any()
    assert (result.iterations, result.converged) == (0, True)
    assert rank_nodes(result.scores, ["a", "b", "c"]) == []


def test_empty_graph() -> None:
    result = personalized_pagerank(sp.csr_matrix((0, 0)), np.zeros(0))
    assert result.scores.shape == (0,)
    assert (result.iterations, result.converged) == (0, True)
    graph = build_passage_graph([], [], [], [])
    assert graph.node_ids == ()
    assert graph.adjacency.shape == (0, 0)
    assert hipporag_reset(graph, fact_scores=[], entity_frequency={}, passage_scores={}).shape == (
        0,
    )


def test_graph_without_edges_returns_the_reset() -> None:
    result = personalized_pagerank(sp.csr_matrix((3, 3)), np.array([1.0, 0.0, 3.0]))
    np.testing.assert_allclose(result.scores, [0.25, 0.0, 0.75])


@pytest.mark.parametrize(
    ("adjacency", "reset", "kwargs"),
    [
        (sp.csr_matrix((2, 3)), np.ones(2), {}),
        (sp.csr_matrix((2, 2)), np.ones(3), {}),
        (sp.csr_matrix(np.array([[0.0, -1.0], [-1.0, 0.0]])), np.ones(2), {}),
        (sp.csr_matrix(np.array([[0.0, np.nan], [np.nan, 0.0]])), np.ones(2), {}),
        (sp.csr_matrix((2, 2)), np.ones(2), {"damping": 1.5}),
        (sp.csr_matrix((2, 2)), np.ones(2), {"max_iterations": 0}),
        (sp.csr_matrix((2, 2)), np.ones(2), {"tolerance": -1.0}),
    ],
)
def test_invalid_input_raises(adjacency: sp.csr_matrix, reset: np.ndarray, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        personalized_pagerank(adjacency, reset, **kwargs)


def test_truncation_bound_values() -> None:
    assert truncation_bound(0.5, 2) == pytest.approx(0.25)
    assert truncation_bound(0.5, 3) == pytest.approx(0.125)
    assert truncation_bound(0.7, 0) == pytest.approx(1.4)
    with pytest.raises(ValueError):
        truncation_bound(0.5, -1)
    with pytest.raises(ValueError):
        truncation_bound(1.2, 1)


# ----------------------------------------------------------------------------- ranking


def test_rank_nodes_orders_by_score_then_id_and_drops_zeros() -> None:
    scores = np.array([0.2, 0.0, 0.5, 0.2, 0.1])
    assert rank_nodes(scores, ["d", "x", "c", "a", "b"]) == [
        ("c", 0.5),
        ("a", 0.2),
        ("d", 0.2),
        ("b", 0.1),
    ]
    with pytest.raises(ValueError):
        rank_nodes(scores, ["a"])


# ----------------------------------------------------------------------------- graph building


def test_build_passage_graph_sums_parallel_edges_and_drops_the_rest() -> None:
    graph = build_passage_graph(
        ["e:b", "e:a", "e:c", "e:a"],
        ["p:2", "p:1"],
        [
            ("e:a", "e:b", 1.0),
            ("e:b", "e:a", 1.0),  # the reverse direction is a parallel edge
            ("e:a", "e:a", 4.0),  # self-loop: dropped
            ("e:a", "e:zzz", 1.0),  # unknown id: ignored
            ("e:a", "p:1", 1.0),  # a passage in an entity edge: ignored
            ("e:b", "e:c", 0.0),  # zero weight: no edge
        ],
        [("e:a", "p:1", 1.0), ("e:c", "p:2", 0.5), ("p:1", "e:a", 1.0), ("e:x", "p:1", 1.0)],
    )
    assert graph.node_ids == ("e:a", "e:b", "e:c", "p:1", "p:2")
    assert graph.index == {"e:a": 0, "e:b": 1, "e:c": 2, "p:1": 3, "p:2": 4}
    assert (graph.n_entities, graph.n_passages) == (3, 2)
    assert graph.passage_mask.tolist() == [False, False, False, True, True]
    expected = np.zeros((5, 5))
    expected[0, 1] = expected[1, 0] = 2.0
    expected[0, 3] = expected[3, 0] = 1.0
    expected[2, 4] = expected[4, 2] = 0.5
    np.testing.assert_array_equal(graph.adjacency.toarray(), expected)


def test_build_passage_graph_rejects_shared_ids_and_bad_weights() -> None:
    with pytest.raises(ValueError, match="both entity and passage"):
        build_passage_graph(["x"], ["x"], [], [])
    with pytest.raises(ValueError):
        build_passage_graph(["a", "b"], [], [("a", "b", -1.0)], [])
    with pytest.raises(ValueError):
        build_passage_graph(["a"], ["p"], [], [("a", "p", float("nan"))])


def test_shuffled_input_gives_identical_scores_and_ranking() -> None:
    rng = random.Random(7)
    entities = [f"e:{i:02d}" for i in range(30)]
    passages = [f"p:{i:02d}" for i in range(20)]
    entity_edges = [(*rng.sample(entities, 2), rng.choice([0.1, 0.3, 1.0])) for _ in range(80)]
    links = [(rng.choice(entities), rng.choice(passages), 1.0 / 3.0) for _ in range(90)]
    reset_nodes = {"e:03": 1.0, "e:11": 0.5, "p:04": 0.05}

    def run(seed: int) -> tuple[list[tuple[str, float]], np.ndarray]:
        shuffle = random.Random(seed).shuffle
        e, p, ee, ep = list(entities), list(passages), list(entity_edges), list(links)
        for items in (e, p, ee, ep):
            shuffle(items)
        graph = build_passage_graph(e, p, ee, ep)
        reset = np.zeros(len(graph.node_ids))
        for node, weight in reset_nodes.items():
            reset[graph.index[node]] = weight
        scores = personalized_pagerank(graph.adjacency, reset).scores
        return rank_nodes(scores, graph.node_ids), scores

    first_ranking, first_scores = run(0)
    assert len(first_ranking) > 10
    for seed in (1, 2, 3):
        ranking, scores = run(seed)
        assert ranking == first_ranking
        assert scores.tobytes() == first_scores.tobytes()


# ----------------------------------------------------------------------------- seeding


def _seed_graph() -> PassageGraph:
    entities = ["e:a", "e:b", "e:c", "e:d"]
    return build_passage_graph(entities, ["p:1", "p:2", "p:3"], [("e:a", "e:b", 1.0)], [])


def test_hipporag_reset_reads_facts_relative_to_the_best_and_divides_by_frequency() -> None:
    graph = _seed_graph()
    # Relative fact scores: 0.8/0.8 = 1, 0.4/0.8 = 0.5. Frequencies a=2, b=1, c=4.
    #   a: mean(1/2)           = 0.5
    #   b: mean(1/1, 0.5/1)    = 0.75
    #   c: mean(0.5/4)         = 0.125
    reset = hipporag_reset(
        graph,
        fact_scores=[("e:a", "e:b", 0.8), ("e:b", "e:c", 0.4)],
        entity_frequency={"e:a": 2, "e:b": 1, "e:c": 4},
        passage_scores={},
    )
    assert reset.tolist() == pytest.approx([0.5, 0.75, 0.125, 0.0, 0.0, 0.0, 0.0])
    # Only the two best entities keep their score.
    top2 = hipporag_reset(
        graph,
        fact_scores=[("e:a", "e:b", 0.8), ("e:b", "e:c", 0.4)],
        entity_frequency={"e:a": 2, "e:b": 1, "e:c": 4},
        passage_scores={},
        link_top_k=2,
    )
    assert top2.tolist() == pytest.approx([0.5, 0.75, 0.0, 0.0, 0.0, 0.0, 0.0])


def test_hipporag_reset_self_loop_fact_counts_both_ends_and_unknowns_take_no_slot() -> None:
    graph = _seed_graph()
    # a: (1 + 1 + 0.5) / 3 with frequency 0 read as 1; b: 0.5; "e:zz" and "p:1" take no slot.
    reset = hipporag_reset(
        graph,
        fact_scores=[("e:a", "e:a", 0.8), ("e:a", "e:b", 0.4), ("e:zz", "p:1", 0.8)],
        entity_frequency={},
        passage_scores={},
        link_top_k=2,
    )
    assert reset.tolist() == pytest.approx([2.5 / 3, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0])


def test_hipporag_reset_ties_keep_the_smaller_id() -> None:
    graph = _seed_graph()
    reset = hipporag_reset(
        graph,
        fact_scores=[("e:d", "e:c", 0.6)],
        entity_frequency={},
        passage_scores={},
        link_top_k=1,
    )
    assert reset.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]


def test_hipporag_reset_weights_passages_by_min_max_hit_score() -> None:
    graph = _seed_graph()
    # (3 - 1) / 2 = 1 -> 0.05; (1 - 1) / 2 = 0 -> 0; (2 - 1) / 2 = 0.5 -> 0.025.
    reset = hipporag_reset(
        graph,
        fact_scores=[],
        entity_frequency={},
        passage_scores={"p:1": 3.0, "p:2": 1.0, "p:3": 2.0, "p:unknown": 9.0, "e:a": 9.0},
    )
    assert reset.tolist() == pytest.approx([0.0, 0.0, 0.0, 0.0, 0.05, 0.0, 0.025])
    tied = hipporag_reset(
        graph,
        fact_scores=[],
        entity_frequency={},
        passage_scores={"p:1": 0.7, "p:3": 0.7},
        passage_node_weight=0.1,
    )
    assert tied.tolist() == pytest.approx([0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.1])


def test_hipporag_reset_without_usable_facts_seeds_no_entity() -> None:
    graph = _seed_graph()
    for facts in ([("e:a", "e:b", 0.0)], [("e:a", "e:b", float("nan"))], []):
        reset = hipporag_reset(graph, fact_scores=facts, entity_frequency={}, passage_scores={})
        assert reset.tolist() == [0.0] * 7
        assert personalized_pagerank(graph.adjacency, reset).scores.tolist() == [0.0] * 7
    with pytest.raises(ValueError):
        hipporag_reset(graph, fact_scores=[], entity_frequency={}, passage_scores={}, link_top_k=-1)
    with pytest.raises(ValueError):
        hipporag_reset(
            graph, fact_scores=[], entity_frequency={}, passage_scores={}, passage_node_weight=-1
        )


def test_lexical_seed_weights_are_relative_to_the_best_bm25_score() -> None:
    # sharpness 10, best 8: 8 -> e^0 = 1; 6 -> e^(10 * (0.75 - 1)) = e^-2.5; 4 -> e^-5.
    weights = lexical_seed_weights([8.0, 6.0, 4.0], 10.0)
    assert weights == pytest.approx([1.0, math.exp(-2.5), math.exp(-5.0)])
    # a negative score counts as 0: e^(10 * (0 - 1)) = e^-10
    assert lexical_seed_weights([2.0, -1.0], 10.0) == pytest.approx([1.0, math.exp(-10.0)])


def test_lexical_seed_weights_fall_back_to_reciprocal_rank() -> None:
    assert lexical_seed_weights([8.0, 6.0, 4.0], 0.0) == pytest.approx([1.0, 0.5, 1 / 3])
    assert lexical_seed_weights([0.0, -1.0], 5.0) == pytest.approx([1.0, 0.5])  # no positive best
    assert lexical_seed_weights([], 5.0) == []
    with pytest.raises(ValueError):
        lexical_seed_weights([1.0], -1.0)
