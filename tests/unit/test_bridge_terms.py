"""Bridge-term ranking of the `iterative` strategy (`domain.ranking.bridge`), by hand values."""

from __future__ import annotations

import math

import pytest

from unified_kg_rag.domain.ranking.bridge import (
    is_written_as_name,
    rank_bridge_terms,
    term_words,
)

QUESTION = "What university did the author of Alexander attend?"
PASSAGES = [["Judith Viorst", "book written", "children", "Alexander"], ["children", "Georgia"]]
DF = {"Judith Viorst": 2, "book written": 5, "children": 30, "Georgia": 4, "Alexander": 3}
TEXTS = [
    "Alexander is a book written by Judith Viorst for children.",
    "Children of Georgia learn to read.",
]


def idf(df: int) -> float:
    return math.log(100 / (1 + df))  # n_units = 99


def test_rare_terms_of_the_best_passages_first_question_words_dropped() -> None:
    ranked = rank_bridge_terms(PASSAGES, QUESTION, document_frequency=DF, n_units=99)
    assert [b.term for b in ranked] == ["Judith Viorst", "book written", "children", "Georgia"]
    assert [b.score for b in ranked] == pytest.approx(
        [idf(2), idf(5), 1.5 * idf(30), 0.5 * idf(4)]
    )  # 3.5066, 2.8134, 1.7568, 1.4979
    assert [b.passages for b in ranked] == [1, 1, 2, 1]


def test_terms_written_as_names_are_boosted() -> None:
    ranked = rank_bridge_terms(
        PASSAGES, QUESTION, document_frequency=DF, n_units=99, texts=TEXTS, name_boost=3.0
    )
    # Judith Viorst 3 × 3.5066 = 10.52; Georgia 3 × 0.5 × 2.9957 = 4.49;
    # children 1 × 1.1712 + 3 × 0.5 × 1.1712 = 2.93 ("Children" opens passage 2); book written 2.81
    assert [b.term for b in ranked] == ["Judith Viorst", "Georgia", "children", "book written"]
    assert ranked[0].score == pytest.approx(3 * idf(2))
    assert ranked[2].score == pytest.approx(2.5 * idf(30))


def test_followed_terms_and_their_parts_are_excluded_and_limit_holds() -> None:
    ranked = rank_bridge_terms(
        [["Tobias Quillfeather", "Quillfeather", "Varnholt", "mountain village"]],
        "Where was the director of Moonfall born?",
        document_frequency={}, n_units=9, exclude=["tobias QUILLFEATHER"], limit=1,
    )  # fmt: skip
    assert [b.term for b in ranked] == ["mountain village"]  # longer first on equal scores


def test_a_term_inside_a_better_one_is_dropped() -> None:
    ranked = rank_bridge_terms(
        [["Paris Hilton", "Paris", "hotel"]], "Who?",
        document_frequency={"Paris Hilton": 1, "Paris": 1, "hotel": 1}, n_units=9,
    )  # fmt: skip
    assert [b.term for b in ranked] == ["Paris Hilton", "hotel"]


def test_nothing_to_rank() -> None:
    assert rank_bridge_terms([], "q", document_frequency={}, n_units=1) == []
    assert rank_bridge_terms([["x y"]], "q", document_frequency={}, n_units=1, limit=0) == []


def test_written_as_name() -> None:
    assert is_written_as_name("judith viorst", "by Judith  Viorst, 1972")
    assert is_written_as_name("margraviate of austria", "the Margraviate of Austria was")
    assert not is_written_as_name("book written", "a Book written by her")
    assert not is_written_as_name("of the", "Of The")  # minor words only
    assert not is_written_as_name("viorst", "Viorstian")  # whole words only
    assert term_words("Hello, Love's") == ("hello", "love", "s")


def test_a_plural_of_a_question_word_is_not_a_bridge() -> None:
    ranked = rank_bridge_terms(
        [["siblings", "Neil Young", "class"]], "Who is the sibling of the performer of Decade?",
        document_frequency={}, n_units=9,
    )  # fmt: skip
    assert [b.term for b in ranked] == ["Neil Young", "class"]  # "class" is not a plural
