"""PPR laws: a probability distribution, and the truncation bound of seed 000 §6.4."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import shortest_path

from unified_kg_rag.domain.ranking.ppr import personalized_pagerank, truncation_bound

pytestmark = pytest.mark.unit


@st.composite
def graphs(draw: st.DrawFn) -> tuple[sp.csr_matrix, np.ndarray]:
    """A small undirected weighted graph (isolated nodes allowed) and a reset vector with mass."""
    n = draw(st.integers(1, 14))
    edges = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.floats(0.1, 5.0)),
            max_size=3 * n,
        )
    )
    edges = [(i, j, w) for i, j, w in edges if i != j]
    rows = [i for i, _, _ in edges] + [j for _, j, _ in edges]
    cols = [j for _, j, _ in edges] + [i for i, _, _ in edges]
    data = [w for _, _, w in edges] * 2
    adjacency = sp.csr_matrix((data, (rows, cols)), shape=(n, n), dtype=np.float64)
    reset = np.array(draw(st.lists(st.sampled_from([0.0, 0.0, 0.3, 1.0]), min_size=n, max_size=n)))
    reset[draw(st.integers(0, n - 1))] += draw(st.floats(0.1, 2.0))
    return adjacency, reset


@settings(max_examples=100, deadline=None)
@given(graphs(), st.floats(0.05, 0.9), st.integers(0, 3))
def test_truncating_to_the_h_hop_ball_moves_at_most_the_bound(
    graph: tuple[sp.csr_matrix, np.ndarray], damping: float, hops: int
) -> None:
    adjacency, reset = graph
    full = personalized_pagerank(
        adjacency, reset, damping=damping, max_iterations=5_000, tolerance=1e-14
    ).scores
    # The h-hop ball around the reset nodes, and PPR on the subgraph it induces.
    hop_distance = shortest_path(
        adjacency, directed=False, unweighted=True, indices=np.flatnonzero(reset > 0)
    ).min(axis=0)
    ball = np.flatnonzero(hop_distance <= hops)
    truncated = np.zeros_like(full)
    truncated[ball] = personalized_pagerank(
        adjacency[ball][:, ball],
        reset[ball],
        damping=damping,
        max_iterations=5_000,
        tolerance=1e-14,
    ).scores
    assert np.abs(full - truncated).sum() <= truncation_bound(damping, hops) + 1e-9
    # The mass outside the ball is at most d^(h+1) (walks need h + 1 steps to get there).
    assert full[hop_distance > hops].sum() <= damping ** (hops + 1) + 1e-9


@settings(max_examples=100, deadline=None)
@given(graphs(), st.floats(0.0, 1.0), st.integers(1, 60))
def test_scores_are_a_distribution(
    graph: tuple[sp.csr_matrix, np.ndarray], damping: float, max_iterations: int
) -> None:
    adjacency, reset = graph
    result = personalized_pagerank(adjacency, reset, damping=damping, max_iterations=max_iterations)
    assert not np.isnan(result.scores).any()
    assert (result.scores >= 0.0).all()
    assert result.scores.sum() == pytest.approx(1.0, abs=1e-12)
    assert 1 <= result.iterations <= max_iterations


@settings(max_examples=50, deadline=None)
@given(graphs())
def test_a_reset_without_mass_gives_zeros(graph: tuple[sp.csr_matrix, np.ndarray]) -> None:
    adjacency, reset = graph
    result = personalized_pagerank(adjacency, np.zeros_like(reset))
    assert result.scores.tolist() == [0.0] * reset.shape[0]
