"""Grounding and confidence rules on hand-written records (`domain.extraction.grounding`)."""

from __future__ import annotations

import pytest

from unified_kg_rag.domain.extraction.grounding import (
    ShapingCounts,
    ShapingRules,
    entity_grounded,
    normalize_text,
    relationship_grounded,
    shape_record,
    span_similarity,
)
from unified_kg_rag.domain.extraction.records import (
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionRecord,
)

TEXT = (
    "Ada Lovelace worked with Charles Babbage on the Analytical Engine in London.\n"
    "She wrote   the “first published program” — an algorithm for Bernoulli numbers."
)


def _norm(text: str = TEXT) -> str:
    return normalize_text(text)


def test_normalize_folds_case_quotes_dashes_width_and_whitespace() -> None:
    assert normalize_text("  “Ｆirst”\u2014PROGRAM\t\n’s ") == "'first'-program's"
    assert normalize_text("Stra\u00dfe  Nord …") == "strasse nord..."
    # tokenised text (MuSiQue's passages) and the span a model writes from it
    tokenised = "Macon ``Milkman ''Dead III , an African - American , 1989 -- 2003"
    written = "Macon 'Milkman' Dead III, an African-American, 1989\u20132003"
    assert normalize_text(tokenised) == normalize_text(written)
    assert normalize_text(written) == "macon'milkman'dead iii,an african-american,1989-2003"


@pytest.mark.parametrize(
    ("span", "score"),
    [
        ("Ada Lovelace worked with Charles Babbage", 100.0),  # verbatim
        ("ada lovelace   WORKED with\ncharles babbage", 100.0),  # case and whitespace
        ('wrote the "first published program" - an algorithm', 100.0),  # straight quotes/dash
        ("“Ada Lovelace worked with Charles Babbage.”", 100.0),  # quotes and stop around it
        ("Ada Lovelace ... Analytical Engine in London", 100.0),  # elided words
        ("Ada Lovelace ... Difference Engine in Paris", 0.0),  # second piece checked below
        ("", 0.0),
        ("...", 0.0),
    ],
)
def test_span_similarity_exact_forms(span: str, score: float) -> None:
    got = span_similarity(span, _norm())
    if span.endswith("Paris"):
        assert got < 90.0  # one piece is not in the text: the lowest piece counts
    else:
        assert got == score


def test_fuzzy_within_and_outside_the_bound() -> None:
    norm = _norm()
    # one letter off in 40: about 97.5, grounded at 90
    one_typo = "Ada Lovelace worked with Charles Babbags"
    assert 95.0 <= span_similarity(one_typo, norm) < 100.0
    # a paraphrase shares words but not the text
    paraphrase = "Lovelace collaborated with Babbage"
    assert span_similarity(paraphrase, norm) < 90.0
    ent = ExtractedEntity(name="Charles Babbage", span=one_typo)
    assert entity_grounded(ent, norm, 90.0)
    assert not entity_grounded(ent, norm, 99.0)
    assert not entity_grounded(ExtractedEntity(name="Babbage", span=paraphrase), norm, 90.0)


def test_span_longer_than_the_text_is_compared_whole() -> None:
    # partial_ratio alone would find the short text inside the long span (score 100)
    assert span_similarity("Paris is the capital of France and its largest city", "paris") < 20


def test_empty_span_falls_back_to_names() -> None:
    norm = _norm()
    assert entity_grounded(ExtractedEntity(name="Charles Babbage."), norm, 90.0)
    assert not entity_grounded(ExtractedEntity(name="Alan Turing"), norm, 90.0)
    both = ExtractedRelationship(source="Ada Lovelace", target="London", type="LIVED_IN")
    one = ExtractedRelationship(source="Ada Lovelace", target="Alan Turing", type="MET")
    assert relationship_grounded(both, norm, 90.0)
    assert not relationship_grounded(one, norm, 90.0)
    # a span, when given, is what is checked (the names do not rescue a made-up span)
    made_up = both.model_copy(update={"span": "Ada Lovelace moved to London in 1835"})
    assert not relationship_grounded(made_up, norm, 90.0)


def test_non_latin_text() -> None:
    text = "서울대학교는 서울특별시 관악구에 있다. 京都大学は京都市にある。"
    norm = normalize_text(text)
    assert entity_grounded(ExtractedEntity(name="서울대학교", span="서울특별시 관악구"), norm, 90.0)
    assert entity_grounded(ExtractedEntity(name="京都大学"), norm, 90.0)
    # full-width digits and letters of a span match their NFKC forms in the text
    assert span_similarity("ＫＹＯＴＯ２０２４", normalize_text("kyoto2024 campus")) == 100.0
    assert not entity_grounded(ExtractedEntity(name="부산대학교"), norm, 90.0)
    assert not entity_grounded(ExtractedEntity(name="大阪大学"), norm, 90.0)


def _record() -> ExtractionRecord:
    return ExtractionRecord(
        fingerprint="f",
        entities=(
            ExtractedEntity(name="Ada Lovelace", confidence=9, span="Ada Lovelace"),
            ExtractedEntity(name="Charles Babbage", confidence=3, span="Charles Babbage"),
            ExtractedEntity(name="Alan Turing", confidence=8, span="Alan Turing met Ada"),
            ExtractedEntity(name="London", confidence=None, span=""),
        ),
        relationships=(
            ExtractedRelationship(source="Ada Lovelace", target="Charles Babbage",
                                  type="WORKED_WITH", strength=8,
                                  span="Ada Lovelace worked with Charles Babbage"),
            ExtractedRelationship(source="Alan Turing", target="Ada Lovelace",
                                  type="ADMIRED", strength=6, span=""),
            ExtractedRelationship(source="Ada Lovelace", target="London",
                                  type="WORKED_IN", strength=2, span=""),
        ),
    )  # fmt: skip


def _names(record: ExtractionRecord) -> list[str]:
    return [e.name for e in record.entities]


def _edges(record: ExtractionRecord) -> dict[str, float]:
    return {r.type: r.strength for r in record.relationships}


def test_off_without_thresholds_returns_the_record_itself() -> None:
    record = _record()
    shaped, counts = shape_record(record, TEXT, ShapingRules(grounding="off"))
    assert shaped is record and counts == ShapingCounts()


def test_drop_removes_ungrounded_items_and_their_relationships() -> None:
    shaped, counts = shape_record(_record(), TEXT, ShapingRules(grounding="drop"))
    assert _names(shaped) == ["Ada Lovelace", "Charles Babbage", "London"]
    assert _edges(shaped) == {"WORKED_WITH": 8, "WORKED_IN": 2}
    # ADMIRED is ungrounded itself (Alan Turing is not in the text): counted by that rule
    assert counts.ungrounded_entities_dropped == 1
    assert counts.ungrounded_relationships_dropped == 1
    assert counts.endpoint_relationships_dropped == 0
    assert counts.checked_by_name == 3  # London, ADMIRED, WORKED_IN
    assert counts.removed == 2 and counts.weighted == 0


def test_weight_keeps_ungrounded_items_scaled() -> None:
    shaped, counts = shape_record(
        _record(), TEXT, ShapingRules(grounding="weight", weight=0.25)
    )
    confidence = {e.name: e.confidence for e in shaped.entities}
    assert confidence == {"Ada Lovelace": 9, "Charles Babbage": 3, "Alan Turing": 2.0,
                          "London": None}
    assert _edges(shaped) == {"WORKED_WITH": 8, "ADMIRED": 1.5, "WORKED_IN": 2}
    assert counts.ungrounded_entities_weighted == 1
    assert counts.ungrounded_relationships_weighted == 1
    assert counts.removed == 0 and counts.weighted == 2


def test_min_confidence_drops_entities_with_their_relationships() -> None:
    shaped, counts = shape_record(
        _record(), TEXT, ShapingRules(grounding="off", min_confidence=5)
    )
    # Babbage (3) goes, London (no confidence) stays; WORKED_WITH names Babbage
    assert _names(shaped) == ["Ada Lovelace", "Alan Turing", "London"]
    assert _edges(shaped) == {"ADMIRED": 6, "WORKED_IN": 2}
    assert counts.low_confidence_entities_dropped == 1
    assert counts.endpoint_relationships_dropped == 1


def test_weighting_then_thresholds() -> None:
    # Alan Turing 8 x 0.5 = 4 < 5: dropped by the threshold, taking ADMIRED (6 x 0.5 = 3)
    shaped, counts = shape_record(
        _record(), TEXT,
        ShapingRules(grounding="weight", weight=0.5, min_confidence=5, min_strength=2.5),
    )
    assert _names(shaped) == ["Ada Lovelace", "London"]
    assert _edges(shaped) == {}
    assert counts.ungrounded_entities_weighted == 1
    assert counts.low_confidence_entities_dropped == 2  # Babbage 3, Turing 4
    # ADMIRED 3.0 passes 2.5 but names Turing; WORKED_IN 2 < 2.5
    assert counts.low_strength_relationships_dropped == 1
    assert counts.endpoint_relationships_dropped == 2  # WORKED_WITH, ADMIRED
    assert counts.removed == 5


def test_counts_add() -> None:
    a = ShapingCounts(ungrounded_entities_dropped=2, checked_by_name=1)
    a.add(ShapingCounts(ungrounded_entities_dropped=3, low_strength_relationships_dropped=4))
    assert a.ungrounded_entities_dropped == 5 and a.low_strength_relationships_dropped == 4
    assert a.checked_by_name == 1 and a.removed == 9
