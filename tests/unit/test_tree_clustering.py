"""The RAPTOR tree's pure algorithms: reduction, k-means, one level's clusters, the stop rule,
the extractive summary and stale-node lineage, on small hand-checkable cases."""

import numpy as np
import pytest

from unified_kg_rag.domain.tree import clustering
from unified_kg_rag.domain.tree.clustering import (
    ClusterSettings,
    cluster_level,
    kmeans_partition,
    level_should_stop,
    reduce_dimensions,
)
from unified_kg_rag.domain.tree.extractive import (
    extractive_summary,
    input_key,
    split_sentences,
)
from unified_kg_rag.domain.tree.lineage import leaf_lineage, stale_nodes
from unified_kg_rag.domain.tree.nodes import SummaryNode, SummaryTree, summary_node_id
from unified_kg_rag.util.errors import UsageError

pytestmark = pytest.mark.unit


def words(text: str) -> int:
    return len(text.split())


def blobs(n_blobs: int, per_blob: int, dims: int = 16, spread: float = 0.05) -> np.ndarray:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(n_blobs, dims)) * 3
    rows = [centres[b] + rng.normal(size=(per_blob, dims)) * spread for b in range(n_blobs)]
    return np.concatenate(rows).astype(np.float32)


# --- reduce_dimensions -------------------------------------------------------------------


def test_reduce_two_vectors_by_hand() -> None:
    # normalised and centred: (.5, -.5) and (-.5, .5); the one axis is (1, -1)/sqrt(2), its
    # first loading (the largest, tied) made positive; coordinates +-sqrt(2)/2, rounded
    v = np.array([[3.0, 0.0], [0.0, 2.0]], dtype=np.float32)
    assert reduce_dimensions(v, 10).tolist() == [[0.707107], [-0.707107]]


def test_reduce_is_scale_free_and_sign_fixed() -> None:
    v = blobs(3, 4)
    a = reduce_dimensions(v, 3)
    assert a.shape == (12, 3)
    assert np.array_equal(a, reduce_dimensions(v * 5, 3))
    # the axes' signs are fixed, so negating the input negates the coordinates
    assert np.allclose(reduce_dimensions(-v, 3), -a, atol=2e-6)


@pytest.mark.parametrize("n", [0, 1])
def test_reduce_tiny(n: int) -> None:
    assert reduce_dimensions(np.ones((n, 4), dtype=np.float32), 10).shape == (n, 0)


def test_reduce_refuses_nan() -> None:
    with pytest.raises(ValueError, match="NaN"):
        reduce_dimensions(np.array([[np.nan, 1.0], [0.0, 1.0]], dtype=np.float32), 2)


# --- kmeans_partition --------------------------------------------------------------------


def test_kmeans_one_dimension_by_hand() -> None:
    keys = ["d", "c", "b", "a"]
    points = np.array([[10.1], [10.0], [0.1], [0.0]])
    # indices sorted by key inside a cluster; clusters by their smallest key
    assert kmeans_partition(keys, points, 2, seed=0) == [[3, 2], [1, 0]]


def test_kmeans_caps_k_at_distinct_points() -> None:
    points = np.array([[1.0], [1.0], [2.0]])
    assert kmeans_partition(["a", "b", "c"], points, 3, seed=0) == [[0, 1], [2]]
    assert kmeans_partition([], np.zeros((0, 1)), 2, seed=0) == []


def test_kmeans_two_steps_past_the_work_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    # four groups on a line; k = 4 runs as 2 coarse clusters (round(sqrt(4))), each split
    # into its share 4 * 4 / 8 = 2
    monkeypatch.setattr(clustering, "_TWO_STEP_WORK", 0)
    points = np.array([[0.0], [0.1], [1.0], [1.1], [10.0], [10.1], [11.0], [11.1]])
    keys = [f"k{i}" for i in range(8)]
    assert kmeans_partition(keys, points, 4, seed=0) == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_kmeans_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="distinct"):
        kmeans_partition(["a", "a"], np.zeros((2, 1)), 1, seed=0)
    with pytest.raises(ValueError, match="2 keys but 1 points"):
        kmeans_partition(["a", "b"], np.zeros((1, 1)), 1, seed=0)


# --- cluster_level -----------------------------------------------------------------------


def test_three_separated_blobs_give_three_clusters() -> None:
    keys = [f"k{i:02d}" for i in range(18)]
    got = cluster_level(keys, blobs(3, 6), [10] * 18, ClusterSettings())
    assert got == [tuple(keys[0:6]), tuple(keys[6:12]), tuple(keys[12:18])]


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_small_levels(n: int) -> None:
    keys = ["c", "a", "b"][:n]
    got = cluster_level(keys, blobs(1, 3)[:n], [5] * n, ClusterSettings())
    assert got == ([] if n == 0 else [tuple(sorted(keys))])


def test_token_bound_splits_a_blob() -> None:
    # one blob of 6 items of 30 tokens: 180 > 100, so at least 2 clusters, each <= 100
    keys = [f"k{i}" for i in range(6)]
    got = cluster_level(keys, blobs(1, 6), [30] * 6, ClusterSettings(max_cluster_tokens=100))
    assert len(got) >= 2
    assert all(30 * len(c) <= 100 for c in got)
    assert sorted(k for c in got for k in c) == keys


def test_single_oversize_item_stays_alone() -> None:
    keys = ["a", "b", "c", "d"]
    tokens = [500, 10, 10, 10]
    got = cluster_level(keys, blobs(1, 4), tokens, ClusterSettings(max_cluster_tokens=100))
    assert ("a",) in got
    assert sorted(k for c in got for k in c) == keys


def test_identical_vectors_pack_in_key_order() -> None:
    keys = [f"k{i}" for i in range(7)]
    vectors = np.ones((7, 8), dtype=np.float32)
    got = cluster_level(keys, vectors, [40] * 7, ClusterSettings(max_cluster_tokens=100))
    assert got == [("k0", "k1"), ("k2", "k3"), ("k4", "k5"), ("k6",)]
    # within the budget: one cluster (k = ceil(7 / 6) = 2, capped at 1 distinct point)
    assert cluster_level(keys, vectors, [1] * 7, ClusterSettings()) == [tuple(keys)]


def test_cluster_settings_are_checked() -> None:
    with pytest.raises(UsageError, match="target_children"):
        ClusterSettings(target_children=1)


@pytest.mark.parametrize(
    ("n_nodes", "n_next", "stop"),
    [(0, 0, True), (11, 2, True), (12, 10, True), (12, 9, False), (15, 12, False),
     (15, 13, True), (100, 17, False), (100, 81, True), (100, 80, False)],
)  # fmt: skip
def test_level_should_stop(n_nodes: int, n_next: int, stop: bool) -> None:
    assert level_should_stop(n_nodes, n_next) is stop


def test_level_should_stop_settings() -> None:
    assert level_should_stop(5, 1, min_nodes_to_cluster=4) is False
    assert level_should_stop(20, 15, min_level_shrink=0.3) is True


# --- extractive summary ------------------------------------------------------------------

SENTENCES = ["Alpha one.", "Beta is near the centre.", "Gamma is close too.", "Delta far."]
VECTORS = np.array([[0, 1], [1, 0], [1, 1], [-1, 0]], dtype=np.float32)
CENTROID = np.array([2, 0], dtype=np.float32)


def test_extractive_picks_the_centroid_sentence_first_and_keeps_order() -> None:
    # cosines 0, 1, .71, -1; budget 8 words: Beta (5) in, Gamma (+4 = 9) skipped,
    # Alpha (+2 = 7) in, Delta (+2 = 9) skipped; printed in the original order
    got = extractive_summary(SENTENCES, VECTORS, CENTROID, max_tokens=8, count_tokens=words)
    assert got == "Alpha one. Beta is near the centre."
    assert (
        extractive_summary(SENTENCES, VECTORS, CENTROID, max_tokens=5, count_tokens=words)
        == "Beta is near the centre."
    )
    everything = extractive_summary(
        SENTENCES, VECTORS, CENTROID, max_tokens=100, count_tokens=words
    )
    assert everything == " ".join(SENTENCES)


def test_extractive_deduplicates_and_handles_empty() -> None:
    sentences = ["Same.", "Same.", "Other."]
    vectors = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    got = extractive_summary(
        sentences, vectors, np.array([1, 0], np.float32), max_tokens=10, count_tokens=words
    )
    assert got == "Same. Other."
    empty = np.zeros((0, 2), dtype=np.float32)
    assert extractive_summary([], empty, CENTROID, max_tokens=10, count_tokens=words) == ""
    assert extractive_summary(SENTENCES, VECTORS, CENTROID, max_tokens=0, count_tokens=words) == ""


def test_extractive_cuts_an_oversize_best_sentence_at_a_word() -> None:
    # budget 1: no sentence fits (the shortest has 2 words): the best one, cut to a word
    got = extractive_summary(SENTENCES, VECTORS, CENTROID, max_tokens=1, count_tokens=words)
    assert got == "Beta"
    one = extractive_summary(
        SENTENCES[1:2], VECTORS[1:2], CENTROID, max_tokens=3, count_tokens=words
    )
    assert one == "Beta is near"
    cjk = extractive_summary(
        ["東京は日本の首都です。"], np.ones((1, 2), np.float32), CENTROID,
        max_tokens=3, count_tokens=len,
    )  # fmt: skip
    assert cjk == "東京は"


def test_split_sentences_uses_the_segmenter() -> None:
    text = "Acme Ltd. was founded in 1990. It makes tools.\n\nSecond block here."
    assert split_sentences(text) == [
        "Acme Ltd. was founded in 1990.",
        "It makes tools.",
        "Second block here.",
    ]
    assert split_sentences("   ") == []


def test_input_key_ignores_child_order_and_sees_text_and_settings() -> None:
    a = input_key([("u1", "one"), ("u2", "two")], "s")
    assert a == input_key([("u2", "two"), ("u1", "one")], "s")
    assert a != input_key([("u1", "one"), ("u2", "two!")], "s")
    assert a != input_key([("u1", "one"), ("u2", "two")], "t")
    assert len(a) == 64


# --- lineage -----------------------------------------------------------------------------


def _node(level: int, children: tuple[str, ...], lineage: tuple[str, ...]) -> SummaryNode:
    sid = summary_node_id(level, children)
    return SummaryNode(id=sid, level=level, text="s", child_ids=children, text_unit_ids=lineage)


def test_leaf_lineage_unions_summaries_and_units() -> None:
    lineage_of = {"s1": ["u2", "u1"], "s2": ["u3", "u2"]}
    assert leaf_lineage(["s2", "u9", "s1"], lineage_of) == ("u1", "u2", "u3", "u9")
    assert leaf_lineage([], lineage_of) == ()


def test_stale_nodes_on_a_two_level_tree() -> None:
    a = _node(1, ("u1", "u2"), ("u1", "u2"))
    b = _node(1, ("u3", "u4"), ("u3", "u4"))
    c = _node(1, ("u5", "u6"), ("u5", "u6"))
    r1 = _node(2, tuple(sorted((a.id, b.id))), ("u1", "u2", "u3", "u4"))
    r2 = _node(2, tuple(sorted((c.id, "u7"))), ("u5", "u6", "u7"))  # u7 promoted
    tree = SummaryTree(nodes=(a, b, c, r1, r2))
    assert stale_nodes(tree, ["u1"]) == {a.id, r1.id}
    assert stale_nodes(tree, ["u4", "u5"]) == {b.id, r1.id, c.id, r2.id}
    assert stale_nodes(tree, ["u7"]) == {r2.id}
    assert stale_nodes(tree, ["u8"]) == set()
    assert stale_nodes(tree, []) == set()
    # a lineage that misses the unit: found through child_ids, and the parent above it
    cut = _node(1, ("u1", "u9"), ("u1",))
    top = _node(2, (cut.id,), ("u1",))
    assert stale_nodes(SummaryTree(nodes=(cut, top)), ["u9"]) == {cut.id, top.id}
