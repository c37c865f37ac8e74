import pytest

from unified_kg_rag.domain.ranking.fusion import weighted_rrf

pytestmark = pytest.mark.unit


def test_rrf_scores_follow_the_formula() -> None:
    fused = dict(weighted_rrf([["a", "b"], ["b", "c"]], [1.0, 0.5], k=10))
    assert fused["a"] == pytest.approx(1 / 11)
    assert fused["b"] == pytest.approx(1 / 12 + 0.5 / 11)
    assert fused["c"] == pytest.approx(0.5 / 12)


def test_item_first_in_both_lists_ranks_first_and_ties_are_deterministic() -> None:
    assert weighted_rrf([["x", "y"], ["x", "z"]])[0][0] == "x"
    assert [i for i, _ in weighted_rrf([["b"], ["a"]])] == ["a", "b"]


def test_duplicates_count_once_at_their_best_rank() -> None:
    fused = dict(weighted_rrf([["a", "a", "b"]], k=1))
    assert fused == {"a": pytest.approx(0.5), "b": pytest.approx(1 / 4)}


@pytest.mark.parametrize(
    ("weights", "k"), [([1.0], 60), ([-1.0, 1.0], 60), ([1.0, 1.0], 0)]
)
def test_invalid_arguments_raise(weights: list[float], k: int) -> None:
    with pytest.raises(ValueError):
        weighted_rrf([["a"], ["b"]], weights, k=k)


def test_zero_weight_list_has_no_influence() -> None:
    assert [i for i, _ in weighted_rrf([["a", "b"], ["b", "a"]], [1.0, 0.0])] == ["a", "b"]
