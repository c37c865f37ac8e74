"""`judge_match`: the weak-match verdict of an extractive answer (issue 16, item 3)."""

from __future__ import annotations

from unified_kg_rag.domain.answers.match import judge_match

FLOORS = {"min_coverage": 0.05, "min_similarity": 0.475}


def test_below_either_floor_is_weak() -> None:
    assert judge_match(0.0, 0.9, **FLOORS).verdict == "weak"
    assert judge_match(0.8, 0.3, **FLOORS).verdict == "weak"
    assert judge_match(0.8, 0.6, **FLOORS).verdict == "strong"


def test_one_quote_holding_every_question_term_is_strong_whatever_its_similarity() -> None:
    # "ZANTHOPLEX-47" asked alone embeds far from the sentence that states it
    assert judge_match(1.0, 0.47, one_quote_coverage=1.0, **FLOORS).verdict == "strong"


def test_terms_spread_over_quotes_of_different_sources_do_not_override() -> None:
    # "population of Mars": "Mars" in one quote, "population" in another
    assert judge_match(1.0, 0.40, one_quote_coverage=0.6, **FLOORS).verdict == "weak"
