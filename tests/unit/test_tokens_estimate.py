"""EstimateTokenCounter and grapheme_floor (domain/text/tokens.py)."""

from __future__ import annotations

import random

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.tokens import assert_grapheme_safe_truncation, grapheme_bounds

from unified_kg_rag.domain.text.tokens import EstimateTokenCounter, grapheme_floor

pytestmark = pytest.mark.unit

COUNTER = EstimateTokenCounter()

# Clusters that a naive cut would split: combining accents, ZWJ emoji, flags, skin tones,
# Hangul jamo, an Indic conjunct, CRLF.
TRICKY = [
    "e\u0301",
    "a\u0308\u0301",
    "👨\u200d👩\u200d👧",
    "🇫🇷",
    "🇩🇪",
    "👍🏽",
    "\u1100\u1161\u11a8",
    "क्ष",
    "\r\n",
    "東京",
    "カタカナ",
    "한국어",
    " ",
    "\n",
]

unicode_text = st.lists(
    st.one_of(st.text(max_size=6), st.sampled_from(TRICKY)), max_size=30
).map("".join)


def test_count_follows_the_script_rules() -> None:
    assert COUNTER.count("") == 0
    assert COUNTER.count("   \n\t ") == 0
    assert COUNTER.count("the") == 1
    assert COUNTER.count("during") == 2  # 6 chars ≈ 1.5 -> rounded to 2
    assert COUNTER.count("internationalization") == 5
    assert COUNTER.count("東京都") == 3  # one per CJK character
    assert COUNTER.count("한국어") == 3
    assert COUNTER.count("a, b!") == 4  # two words, two symbols
    assert COUNTER.count("👨\u200d👩\u200d👧🇫🇷") == 2  # one per symbol cluster


def test_spans_cover_every_non_space_character_in_order() -> None:
    text = "Héllo, wörld! 東京 internationalization 👍🏽"
    spans = COUNTER.token_spans(text)
    assert len(spans) == COUNTER.count(text)
    assert [text[a:b] for a, b in spans][:4] == ["Héllo", ",", "wörld", "!"]
    assert "".join(text[a:b] for a, b in spans) == regex.sub(r"\s", "", text)


def test_truncate_cuts_at_token_ends() -> None:
    text = "alpha beta gamma delta"
    assert COUNTER.truncate(text, 0) == ""
    assert COUNTER.truncate(text, 2) == "alpha beta"  # "alpha" is 1 token (5 chars)
    assert COUNTER.truncate(text, 100) == text
    assert COUNTER.truncate("internationalization", 2) == "internat"


def test_truncate_never_splits_an_emoji_sequence_or_flag() -> None:
    text = "ok 👨\u200d👩\u200d👧🇫🇷 e\u0301\u0301tude"
    for k in range(COUNTER.count(text) + 1):
        out = COUNTER.truncate(text, k)
        assert text.startswith(out)
        assert len(out) in grapheme_bounds(text)
        assert COUNTER.count(out) <= k


def test_grapheme_floor_matches_full_segmentation_far_from_anchors() -> None:
    # 6,000 regional indicators: pairs form flags, and no ASCII anchor exists nearby, so
    # grapheme_floor must segment from the start to get the pairing right.
    rng = random.Random(7)
    text = "".join(rng.choice(["🇫🇷", "🇩🇪", "🇯🇵"]) for _ in range(3000)) + "x"
    bounds = sorted(grapheme_bounds(text))
    for pos in (1, 2, 4097, 4098, 5999, 6000, 6001):
        expected = max(b for b in bounds if b <= pos)
        assert grapheme_floor(text, pos) == expected


@settings(max_examples=300, deadline=None)
@given(text=unicode_text, k=st.integers(min_value=0, max_value=40))
def test_property_truncate_is_a_grapheme_safe_prefix_within_budget(text: str, k: int) -> None:
    assert_grapheme_safe_truncation(COUNTER, text, k)


@settings(max_examples=300, deadline=None)
@given(text=unicode_text)
def test_property_spans_reconstruct_the_non_space_text(text: str) -> None:
    spans = COUNTER.token_spans(text)
    assert len(spans) == COUNTER.count(text)
    pos = 0
    for start, end in spans:
        assert pos <= start < end <= len(text)
        assert text[pos:start].strip() == ""  # only whitespace between tokens
        pos = end
    assert text[pos:].strip() == ""


@settings(max_examples=300, deadline=None)
@given(text=unicode_text, pos=st.integers(min_value=-2, max_value=200))
def test_property_grapheme_floor_is_the_largest_boundary_below(text: str, pos: int) -> None:
    bounds = grapheme_bounds(text)
    expected = max(b for b in bounds if b <= max(pos, 0))
    assert grapheme_floor(text, pos) == min(expected, len(text))
