"""RAPTOR tree clustering laws: determinism, permutation invariance, a partition within the
token bound, lineage as a union, and stability of the clusters when one point is added."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_kg_rag.domain.tree.clustering import ClusterSettings, cluster_level
from unified_kg_rag.domain.tree.lineage import leaf_lineage

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def levels(draw: st.DrawFn) -> tuple[list[str], np.ndarray, list[int], ClusterSettings]:
    n = draw(st.integers(0, 40))
    dims = draw(st.integers(1, 6))
    keys = draw(st.lists(st.text("abcdefgh", min_size=1, max_size=6), min_size=n, max_size=n,
                         unique=True))  # fmt: skip
    # small integers: repeated vectors and exact ties are common
    cells = draw(st.lists(st.integers(-3, 3), min_size=n * dims, max_size=n * dims))
    vectors = np.array(cells, dtype=np.float32).reshape(n, dims)
    tokens = draw(st.lists(st.integers(1, 300), min_size=n, max_size=n))
    cfg = ClusterSettings(
        target_children=draw(st.integers(2, 8)),
        max_cluster_tokens=draw(st.integers(50, 800)),
        reduction_dims=draw(st.integers(1, 10)),
        seed=draw(st.integers(0, 3)),
    )
    return keys, vectors, tokens, cfg


@SETTINGS
@given(levels())
def test_same_input_same_clusters(level: tuple[list[str], np.ndarray, list[int], ClusterSettings]) -> None:
    keys, vectors, tokens, cfg = level
    assert cluster_level(keys, vectors, tokens, cfg) == cluster_level(
        list(keys), vectors.copy(), list(tokens), cfg
    )


@SETTINGS
@given(levels(), st.randoms(use_true_random=False))
def test_input_order_does_not_matter(
    level: tuple[list[str], np.ndarray, list[int], ClusterSettings], rnd: object
) -> None:
    keys, vectors, tokens, cfg = level
    order = list(range(len(keys)))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    shuffled = cluster_level([keys[i] for i in order], vectors[order], [tokens[i] for i in order],
                             cfg)  # fmt: skip
    assert shuffled == cluster_level(keys, vectors, tokens, cfg)


@SETTINGS
@given(levels())
def test_a_partition_within_the_token_bound(
    level: tuple[list[str], np.ndarray, list[int], ClusterSettings],
) -> None:
    keys, vectors, tokens, cfg = level
    clusters = cluster_level(keys, vectors, tokens, cfg)
    flat = [k for c in clusters for k in c]
    assert sorted(flat) == sorted(keys)  # every key exactly once
    assert all(c == tuple(sorted(c)) and c for c in clusters)
    assert clusters == sorted(clusters)
    n_tokens = dict(zip(keys, tokens, strict=True))
    for c in clusters:
        assert len(c) == 1 or sum(n_tokens[k] for k in c) <= cfg.max_cluster_tokens


@SETTINGS
@given(st.lists(st.lists(st.sampled_from("uvwxyz"), max_size=4), min_size=1, max_size=5),
       st.lists(st.sampled_from("uvwxyz"), max_size=4))  # fmt: skip
def test_lineage_is_the_union(summaries: list[list[str]], units: list[str]) -> None:
    lineage_of = {f"s{i}": lineage for i, lineage in enumerate(summaries)}
    children = [*lineage_of, *units]
    expected = set(units).union(*summaries)
    got = leaf_lineage(children, lineage_of)
    assert got == tuple(sorted(expected))


def _blob_level(trial: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(trial)
    centres = rng.normal(size=(5, 32))
    vectors = np.concatenate([centres[b] + rng.normal(size=(12, 32)) * 0.35 for b in range(5)])
    extra = centres[trial % 5] + rng.normal(size=32) * 0.35
    keys = [f"t{trial}-{i:03d}" for i in range(60)]
    return keys, vectors.astype(np.float32), extra.astype(np.float32)[None]


def test_adding_one_point_keeps_most_clusters() -> None:
    # 60 points in 5 blobs, then a 61st; target_children 7 keeps k = 9 on both sides. The new
    # point's own cluster must change, so at most 8 of 9 clusters can be kept.
    cfg = ClusterSettings(target_children=7)
    shares = []
    for trial in range(10):
        keys, vectors, extra = _blob_level(trial)
        before = cluster_level(keys, vectors, [100] * 60, cfg)
        after = cluster_level([*keys, "new"], np.vstack([vectors, extra]), [100] * 61, cfg)
        shares.append(len(set(before) & set(after)) / len(before))
    assert float(np.mean(shares)) >= 0.5
