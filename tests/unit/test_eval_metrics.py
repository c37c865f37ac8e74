"""Answer-match, ranking, evidence and abstention metrics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from unified_kg_rag.evaluation.metrics import (
    AbstentionCase,
    abstention_stats,
    answer_contains,
    answer_span,
    evidence_hits,
    evidence_mrr,
    evidence_ndcg_at_k,
    evidence_recall_at_k,
    exact_match,
    f1_score,
    hits_ndcg_at_k,
    hits_recall_at_k,
    mrr,
    name_hits,
    ndcg_at_k,
    normalize_evidence,
    recall_at_k,
    squad_normalize,
)

pytestmark = pytest.mark.unit

L2, L3, L4 = 1.0, 1 / math.log2(3), 0.5  # discounts of ranks 1, 2, 3


# ----------------------------------------------------------------------------- answers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The  Quick, brown-fox!", "quick brownfox"),
        ("An apple a day", "apple day"),
        ("A Theater", "theater"),  # lower() before the article rule; "the" inside a word stays
        ("the.", ""),
        ("a.b", "ab"),  # punctuation goes first, so "a.b" is no article
        ("“Paris”", "“paris”"),  # no Unicode normalisation in the official script
        ("1,000 km\n\tlong", "1000 km long"),
        ("", ""),
    ],
)
def test_squad_normalize_follows_the_official_script(text: str, expected: str) -> None:
    assert squad_normalize(text) == expected


def test_exact_match_takes_the_best_reference() -> None:
    assert exact_match("The Paris!", ["London", "paris"]) == 1.0
    assert exact_match("Paris, France", ["Paris"]) == 0.0
    assert exact_match("Paris", []) == 0.0
    assert exact_match("the", ["a"]) == 1.0  # both normalise to ""


def test_f1_is_squad_token_f1() -> None:
    # [eiffel, tower] vs [eiffel, tower, in, paris]: P = 1, R = 1/2, F1 = 2/3
    assert f1_score("the Eiffel tower", ["Eiffel Tower in Paris"]) == pytest.approx(2 / 3)
    # the overlap is a multiset: [paris, paris] vs [paris]: P = 1/2, R = 1
    assert f1_score("Paris paris", ["Paris"]) == pytest.approx(2 / 3)
    # max over references: [new, york, city] vs [new, york] -> P 2/3, R 1 -> 0.8
    assert f1_score("New York City", ["Boston", "New York"]) == pytest.approx(0.8)
    assert f1_score("Lyon", ["Paris"]) == 0.0
    assert f1_score("Paris", []) == 0.0


def test_f1_with_no_tokens_follows_squad_v2() -> None:
    assert f1_score("the", ["a"]) == 1.0
    assert f1_score("", ["Paris"]) == 0.0
    assert f1_score("Paris", ["..."]) == 0.0


def test_answer_contains_matches_whole_normalised_words() -> None:
    assert answer_contains("It is in Paris, France.", ["paris"]) == 1.0
    assert answer_contains("A Parisian café", ["Paris"]) == 0.0
    assert answer_contains("He said “O’Neil” twice", ["ONeil"]) == 1.0
    assert answer_contains("anything", [""]) == 0.0
    assert answer_contains("anything", []) == 0.0


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Paris [1].\nIt is the capital [2, 3].", "Paris."),
        ("## **Paris** [1], France [2-3].", "Paris, France."),
        ("\n  \n- *The Eiffel Tower* is in Paris [1][3].", "The Eiffel Tower is in Paris."),
        ("1. Paris\n2. Lyon", "Paris"),
        ("> - __x__ [2.3]", "x"),
        ("`snake_case` and _emphasis_", "snake_case and emphasis"),
        ("3.5 million [1]", "3.5 million"),
        ("1990 was the year.", "1990 was the year."),
        ("[1]\n\nSeine", "Seine"),
        ("", ""),
        ("  \n [4] \n", ""),
        ("Paris" + " " * 20_000 + "x [1]", "Paris x"),
    ],
)
def test_answer_span_first_line(answer: str, expected: str) -> None:
    assert answer_span(answer) == expected


def test_answer_span_whole_keeps_every_line_without_markers() -> None:
    answer = "# Answer\n\n**Paris** [1].\n\n* It lies on the Seine [2; 3].\n"
    assert answer_span(answer, "whole") == "Answer\nParis.\nIt lies on the Seine."


# ----------------------------------------------------------------------------- ranking

RETRIEVED = [{"a"}, {"b", "x"}, {"c"}]


def test_mrr_is_the_reciprocal_rank_of_the_first_match() -> None:
    assert mrr(RETRIEVED, ["B", "C"]) == 0.5
    assert mrr(RETRIEVED, ["c"]) == pytest.approx(1 / 3)
    assert mrr(RETRIEVED, ["z"]) == 0.0
    assert mrr([], ["a"]) == 0.0
    assert mrr(RETRIEVED, []) == 0.0


def test_ndcg_hand_computed() -> None:
    idcg2 = L2 + L3
    # hits at ranks 2 and 3, two supporting items
    assert ndcg_at_k(RETRIEVED, ["B", "C"], 3) == pytest.approx((L3 + L4) / idcg2)
    assert ndcg_at_k(RETRIEVED, ["B", "C"], 2) == pytest.approx(L3 / idcg2)
    # k below the number of supporting items: IDCG has k ideal hits
    assert ndcg_at_k([{"b"}, {"c"}], ["b", "c", "d"], 1) == 1.0
    assert ndcg_at_k([{"b"}, {"c"}], ["b", "c", "d"], 3) == pytest.approx(idcg2 / (idcg2 + L4))
    assert ndcg_at_k(RETRIEVED, [], 3) == 0.0
    assert ndcg_at_k(RETRIEVED, ["a"], 0) == 0.0


def test_ndcg_counts_each_supporting_item_once() -> None:
    idcg2 = L2 + L3
    # rank 2 repeats "b": no gain; "c" at rank 3 is new
    assert ndcg_at_k([{"b"}, {"b"}, {"c"}], ["b", "c"], 3) == pytest.approx((L2 + L4) / idcg2)
    # one document holding both items gains once
    assert ndcg_at_k([{"b", "c"}], ["b", "c"], 3) == pytest.approx(L2 / idcg2)
    # duplicate supporting names are one item
    assert ndcg_at_k([{"b"}], ["b", "B"], 3) == 1.0
    assert name_hits([{"b"}, {"c", "b"}], ["B", "c", "b"]) == (
        [frozenset({0}), frozenset({0, 1})],
        2,
    )


def test_ndcg_of_a_perfect_ranking_is_one() -> None:
    assert ndcg_at_k([{"a"}, {"b"}, {"z"}], ["a", "b"], 10) == pytest.approx(1.0)
    assert hits_ndcg_at_k([frozenset({0}), frozenset({1})], 2, 2) == pytest.approx(1.0)


def test_hits_recall_at_k() -> None:
    hits = [frozenset({1}), frozenset(), frozenset({0, 1}), frozenset({2})]
    assert hits_recall_at_k(hits, 4, 1) == 0.25
    assert hits_recall_at_k(hits, 4, 3) == 0.5
    assert hits_recall_at_k(hits, 4, 10) == 0.75
    assert hits_recall_at_k(hits, 0, 10) == 0.0


def test_recall_at_k_is_unchanged() -> None:
    assert recall_at_k(RETRIEVED, ["B", "C"], 2) == 0.5
    assert recall_at_k(RETRIEVED, ["b", "b"], 3) == 1.0
    assert recall_at_k(RETRIEVED, [], 3) == 0.0


# ----------------------------------------------------------------------------- evidence

UNITS = [
    "Nothing relevant here.",
    "Marie   Curie won the NOBEL prize\nin Physics in 1903. Later, more.",
    "Pierre said: “it’s Paris”.",
    "Ｐａｒｉｓ is on the Seine.",  # full-width letters: NFKC makes them ASCII
]
EVIDENCE = [
    "marie curie won the Nobel Prize in physics in 1903.",
    "Pierre said: \"it's Paris\"",
    "Paris is on the Seine",
]


def test_normalize_evidence_keeps_punctuation() -> None:
    assert normalize_evidence("  It’s  “Ｆine”,\n OK. ") == "it's \"fine\", ok."


def test_evidence_hits_per_unit() -> None:
    hits, n = evidence_hits(UNITS, EVIDENCE)
    assert n == 3
    assert hits == [frozenset(), frozenset({0}), frozenset({1}), frozenset({2})]
    # punctuation is not removed: a snippet without its comma is not found
    assert evidence_hits(["a, b"], ["a b"]) == ([frozenset()], 1)
    # blank and duplicate snippets are dropped
    assert evidence_hits(["x"], ["  ", "X", "x"]) == ([frozenset({0})], 1)
    assert evidence_hits(["x"], []) == ([frozenset()], 0)


def test_evidence_recall_mrr_ndcg() -> None:
    assert evidence_recall_at_k(UNITS, EVIDENCE, 1) == 0.0
    assert evidence_recall_at_k(UNITS, EVIDENCE, 2) == pytest.approx(1 / 3)
    assert evidence_recall_at_k(UNITS, EVIDENCE, 10) == 1.0
    assert evidence_recall_at_k(UNITS, [], 10) == 0.0
    assert evidence_mrr(UNITS, EVIDENCE) == 0.5
    assert evidence_mrr(UNITS, ["absent"]) == 0.0
    idcg3 = L2 + L3 + L4
    dcg = L3 + L4 + 1 / math.log2(5)
    assert evidence_ndcg_at_k(UNITS, EVIDENCE, 4) == pytest.approx(dcg / idcg3)
    assert evidence_ndcg_at_k(UNITS, EVIDENCE, 2) == pytest.approx(L3 / (L2 + L3))


def test_evidence_unit_repeating_a_snippet_gains_nothing() -> None:
    units = ["alpha beta", "ALPHA beta again", "gamma"]
    assert evidence_ndcg_at_k(units, ["alpha beta", "gamma"], 3) == pytest.approx(
        (L2 + L4) / (L2 + L3)
    )


def test_evidence_on_long_units() -> None:
    # about the size of a novel question: 50 units of ~1,200 tokens, 5 snippets of 200 chars
    filler = "word " * 1200
    snippets = [f"snippet {i} " + "x" * 190 for i in range(5)]
    units = [filler] * 50
    units[7] = filler + snippets[3].upper() + filler
    units[30] = snippets[0] + filler
    assert evidence_recall_at_k(units, snippets, 50) == pytest.approx(2 / 5)
    assert evidence_mrr(units, snippets) == pytest.approx(1 / 8)
    assert evidence_ndcg_at_k(units, snippets, 10) == pytest.approx(
        (1 / math.log2(9)) / sum(1 / math.log2(r + 1) for r in range(1, 6))
    )


# ----------------------------------------------------------------------------- abstention


def _case(answerable: bool, abstained: bool = False, failed: bool = False,
          correct: float | None = None) -> AbstentionCase:  # fmt: skip
    return AbstentionCase(answerable=answerable, abstained=abstained, failed=failed,
                          correct=correct)  # fmt: skip


def test_abstention_stats_hand_computed() -> None:
    cases = [
        _case(True, correct=1.0),  # answered, right
        _case(True, correct=0.5),  # answered, half right
        _case(True, abstained=True, correct=1.0),  # wrong decline: scores 0
        _case(True, failed=True),  # failed, no reference
        _case(True),  # answered, no reference
        _case(True, abstained=True, failed=True, correct=0.0),  # a failure, not a decline
        _case(False, abstained=True),  # right decline
        _case(False, abstained=True),  # right decline
        _case(False),  # answered an unanswerable item
        _case(False, failed=True),
        _case(False, abstained=True, failed=True),  # a failure is never a decline
    ]
    s = abstention_stats(cases)
    assert (s.n_answerable, s.n_unanswerable) == (6, 5)
    assert (s.abstained_answerable, s.abstained_unanswerable, s.failed) == (1, 2, 4)
    assert s.precision == pytest.approx(2 / 3)
    assert s.recall == pytest.approx(2 / 5)
    assert s.f1 == pytest.approx(0.5)  # 2 * (2/3) * 0.4 / (2/3 + 0.4)
    assert s.coverage == pytest.approx(3 / 6)
    assert s.accuracy == pytest.approx((1.0 + 0.5 + 0 + 0) / 4)
    assert s.selective_accuracy == pytest.approx((1.0 + 0.5) / 2)
    assert s.overall_accuracy == pytest.approx((1.0 + 0.5 + 0 + 0 + 1 + 1 + 0 + 0 + 0) / 9)


def test_abstention_stats_undefined_rates_are_none() -> None:
    empty = abstention_stats([])
    assert (empty.n_answerable, empty.n_unanswerable, empty.failed) == (0, 0, 0)
    assert empty.precision is None and empty.recall is None and empty.f1 is None
    assert empty.coverage is None and empty.accuracy is None
    assert empty.selective_accuracy is None and empty.overall_accuracy is None

    only_answerable = abstention_stats([_case(True, correct=1.0), _case(True, correct=0.0)])
    assert only_answerable.precision is None and only_answerable.recall is None
    assert only_answerable.f1 is None and only_answerable.overall_accuracy is None
    assert only_answerable.coverage == 1.0 and only_answerable.accuracy == 0.5

    declined_all = abstention_stats([_case(True, abstained=True, correct=1.0)])
    assert declined_all.coverage == 0.0 and declined_all.accuracy == 0.0
    assert declined_all.selective_accuracy is None and declined_all.precision == 0.0

    no_reference = abstention_stats([_case(True), _case(False)])
    assert no_reference.accuracy is None and no_reference.coverage == 1.0
    assert no_reference.recall == 0.0 and no_reference.precision is None
    assert no_reference.overall_accuracy == 0.0  # one unanswerable item, not declined


def test_abstention_f1_is_zero_when_precision_and_recall_are() -> None:
    s = abstention_stats([_case(True, abstained=True, correct=1.0), _case(False)])
    assert (s.precision, s.recall, s.f1) == (0.0, 0.0, 0.0)


def test_abstention_stats_serialises() -> None:
    s = abstention_stats([_case(False, abstained=True)])
    assert s.model_dump()["precision"] == 1.0
    assert s.model_dump()["recall"] == 1.0
