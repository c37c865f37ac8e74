import itertools

import pytest

from unified_kg_rag.domain.text.analysis import (
    lexical_query_terms,
    lexical_terms,
    lexical_text,
    paragraph_breaks,
    sentence_spans,
)

pytestmark = pytest.mark.unit


def test_words_are_casefolded_and_cjk_runs_become_bigrams() -> None:
    assert lexical_terms("Hello WORLD") == ["hello", "world"]
    assert lexical_terms("東京都") == ["東京", "京都"]
    assert lexical_terms("서울에서 만나요") == ["서울", "울에", "에서", "만나", "나요"]
    assert lexical_terms("の") == ["の"]
    assert lexical_terms("Café DÉJÀ vu") == ["cafe", "deja", "vu"]
    assert lexical_terms("Ελλάδα Москва́") == ["ελλαδα", "москва"]
    assert lexical_terms("हिन्दी") == ["हिन्दी"]  # Devanagari marks are spelling, kept
    assert lexical_terms("O’Neil's U.S. Straße") == ["o'neil's", "u.s", "strasse"]
    assert lexical_text("A b") == "a b"


def test_query_terms_drop_stopwords_unless_nothing_else_is_left() -> None:
    assert lexical_query_terms("Who was the first president of France?") == [
        "first",
        "president",
        "france",
    ]
    assert lexical_query_terms("Who is it?") == ["who", "is", "it"]
    assert lexical_query_terms("the the Paris") == ["paris"]


def test_sentence_spans_respect_abbreviations_and_cjk_stops() -> None:
    text = "Dr. Smith met J. Doe. They talked! 今日は晴れ。明日も。\n\nNew paragraph"
    got = [text[s:e] for s, e in sentence_spans(text)]
    assert got == [
        "Dr. Smith met J. Doe.",
        "They talked!",
        "今日は晴れ。",
        "明日も。",
        "New paragraph",
    ]


def test_sentence_spans_cover_text_in_order_without_overlap() -> None:
    text = "One. Two?  Three!\nFour"
    spans = sentence_spans(text)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert [text[s:e] for s, e in spans] == ["One.", "Two?", "Three!", "Four"]
    assert sentence_spans("   \n ") == []


def test_paragraph_breaks() -> None:
    text = "a\n\nb\n \n\nc"
    assert [text[i] for i in paragraph_breaks(text)] == ["b", "c"]
