"""Concept extraction and the LLM-free concept graph (domain/concepts/graph.py, domain/concepts/text.py)."""

from __future__ import annotations

import io
import json
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_kg_rag.domain.concepts.graph import (
    ConceptGraph,
    ConceptVocabulary,
    build_concept_graph,
    concept_id,
    concept_key,
    detect_language,
    keyphrases,
)
from unified_kg_rag.domain.concepts.text import cjk_keyphrases, text_clauses
from unified_kg_rag.domain.identity import entity_key
from unified_kg_rag.util.errors import ConfigurationError, StoreSchemaError
from unified_kg_rag.util.hashing import sha256_text

pytestmark = pytest.mark.unit

EN = (
    "The Journal of Mathematical Physics is a peer-reviewed journal published monthly by the "
    "American Institute of Physics. The current editor is Jan Philip Solovej from the "
    "University of Copenhagen."
)
DE = (
    "Die Bundesregierung hat heute das neue Klimaschutzgesetz vorgestellt. Das "
    "Klimaschutzgesetz sieht vor, dass Deutschland bis 2045 klimaneutral wird. Die "
    "Bundesregierung plant dafür Investitionen in erneuerbare Energien und den Ausbau der "
    "Windkraftanlagen in Norddeutschland."
)
KO = (
    "서울특별시는 대한민국의 수도이다. 서울특별시에는 경복궁과 남산타워가 있다. 한강은 서울을 "
    "가로질러 흐르며, 많은 관광객이 한강 공원을 방문한다."
)
ZH = "北京是中华人民共和国的首都。北京有故宫和长城等著名景点。每年有很多游客来北京参观故宫博物院。"
JA = "東京都は日本の首都です。東京都庁は新宿区にあります。東京タワーは東京都港区にある電波塔です。"

PARIS_UNITS = [
    (
        "a",
        "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. Gustave Eiffel's "
        "company designed the tower.",
        "Eiffel Tower",
    ),
    (
        "b",
        "Gustave Eiffel was a French civil engineer. He is known for the Eiffel Tower in Paris.",
        "Gustave Eiffel",
    ),
    (
        "c",
        "Paris is the capital of France. The Louvre museum in Paris is the world's most-visited "
        "museum.",
        "Paris",
    ),
]


def _links(graph: ConceptGraph) -> set[tuple[str, str]]:
    return {
        (graph.unit_ids[u], graph.concepts[c])
        for u, c in zip(graph.unit_index.tolist(), graph.concept_index.tolist(), strict=True)
    }


# ----------------------------------------------------------------------------- language


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (EN, "en"),
        (DE, "de"),
        ("Le musée du Louvre est situé à Paris, dans le premier arrondissement.", "fr"),
        ("El museo del Prado es una de las pinacotecas más importantes del mundo.", "es"),
        ("Москва является столицей России и крупнейшим городом страны.", "ru"),
        ("Київ є столицею України.", "uk"),
        (KO, "ko"),
        (ZH, "zh"),
        (JA, "ja"),
        ("", "en"),
        ("12345 !!! 😀", "en"),
    ],
)
def test_detect_language(text: str, expected: str) -> None:
    assert detect_language(text) == expected


# ----------------------------------------------------------------------------- keys


def test_concept_key_normalises_like_entity_key_and_is_a_fixed_point() -> None:
    assert concept_key("The U.S. Army's 1st Division") == "the u.s army 1st division"
    assert concept_key("Peer-Reviewed “Journal”") == "peer reviewed journal"
    assert concept_key("C++") == "c++"
    assert concept_key("C#") == "c#"
    assert concept_key("서울특별시는") == "서울특별시"
    assert concept_key("(!)") == ""
    for phrase in ("Gustave Eiffel's company", "Ｆｕｌｌ　Ｗｉｄｔｈ", "São Paulo, Brazil", "東京都"):
        key = concept_key(phrase)
        assert key
        assert entity_key(key) == key
        assert concept_key(key) == key


def test_text_clauses_split_at_sentence_punctuation_not_at_abbreviations_or_commas() -> None:
    clauses = text_clauses("He moved to Paris, Texas. Then the U.S. Army (briefly) hired him!")
    assert clauses == [
        ["he", "moved", "to", "paris", "texas"],
        ["then", "the", "u.s", "army"],
        ["briefly"],
        ["hired", "him"],
    ]


# ----------------------------------------------------------------------------- keyphrases


def test_english_keyphrases() -> None:
    phrases = keyphrases(EN)
    assert "mathematical physics" in phrases
    assert "jan philip solovej" in phrases
    assert "american institute" in phrases
    assert len(phrases) == len(set(phrases))
    assert all(p and entity_key(p) == p for p in phrases)


def test_german_keyphrases_keep_compound_nouns() -> None:
    phrases = keyphrases(DE)
    assert "klimaschutzgesetz" in phrases
    assert "bundesregierung" in phrases
    assert "windkraftanlagen in norddeutschland" in phrases
    assert "erneuerbare energien" in phrases
    assert all(p == p.casefold() for p in phrases)


def test_korean_keyphrases_strip_particles() -> None:
    phrases = keyphrases(KO)
    assert "서울특별시" in phrases  # from 서울특별시는 and 서울특별시에는
    assert "대한민국" in phrases  # from 대한민국의
    assert "경복궁" in phrases  # from 경복궁과
    assert not any(p.endswith(("는", "의")) for p in phrases)


def test_chinese_keyphrases_split_at_function_characters() -> None:
    phrases = keyphrases(ZH)
    assert phrases[:2] == ["北京", "故宫"]  # the most frequent come first
    assert "中华人民共和国" in phrases
    assert "首都" in phrases
    assert all(len(p) >= 2 for p in phrases)


def test_japanese_keyphrases_are_kanji_and_katakana_runs() -> None:
    phrases = keyphrases(JA)
    assert phrases[0] == "東京都"
    assert {"東京タワー", "新宿区", "電波塔", "日本", "首都"} <= set(phrases)
    assert not any(ch in p for p in phrases for ch in "はのにです")


def test_cjk_long_runs_give_repeated_ngrams_only() -> None:
    text = "甲乙丙丁戊己庚辛壬癸子丑寅卯甲乙"  # one 16-character run, "甲乙" twice
    assert cjk_keyphrases(text, language="zh") == ["甲乙"]


def test_keyphrases_top_and_max_ngram() -> None:
    phrases = keyphrases(EN, top=3, max_ngram=1)
    assert 1 <= len(phrases) <= 3
    assert all(" " not in p for p in phrases)


@pytest.mark.parametrize(
    "text", ["", "   \n\t", "😀🎉🔥", "\x00\x01\x02\xff\ufffd" * 20, "!!! ??? ...", "a", "x" * 5000]
)
def test_keyphrases_never_raise_on_odd_input(text: str) -> None:
    phrases = keyphrases(text)
    assert all(isinstance(p, str) and p for p in phrases)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_keyphrases_are_nonempty_normalised_and_distinct(text: str) -> None:
    phrases = keyphrases(text)
    assert len(phrases) == len(set(phrases))
    for phrase in phrases:
        assert phrase
        assert entity_key(phrase) == phrase


# ----------------------------------------------------------------------------- vocabulary


def test_vocabulary_finds_word_and_cjk_concepts() -> None:
    vocabulary = ConceptVocabulary(["eiffel tower", "paris", "故宫", "中华人民共和国", ""])
    assert len(vocabulary) == 4
    assert vocabulary.find("Who built the Eiffel Tower in Paris?") == [
        ("eiffel tower", 2),
        ("paris", 1),
    ]
    # Substrings of Han runs; size is characters / 2 rounded up.
    assert vocabulary.find("中华人民共和国首都的故宫很大") == [("中华人民共和国", 4), ("故宫", 1)]
    assert vocabulary.find("eiffel. tower") == []  # no match across a sentence end


# ----------------------------------------------------------------------------- graph


def test_graph_links_prunes_and_weighs() -> None:
    graph = build_concept_graph(PARIS_UNITS)
    assert graph.unit_ids == ("a", "b", "c")
    assert list(graph.concepts) == sorted(graph.concepts)
    assert graph.concept_ids == tuple(sha256_text("concept", k) for k in graph.concepts)
    assert graph.concept_ids[0] == concept_id(graph.concepts[0])
    assert {"paris", "eiffel tower", "gustave eiffel", "france"} <= set(graph.concepts)
    df = dict(zip(graph.concepts, graph.df, strict=True))
    assert df["paris"] == 3  # a title, and contained in every unit
    assert df["gustave eiffel"] == 2  # b's title, contained in a's text ("Gustave Eiffel's")
    links = _links(graph)
    assert ("a", "gustave eiffel") in links
    assert ("c", "eiffel tower") not in links
    # Every concept's df is the number of units linked to it, within [min_df, max_df].
    per_concept = np.bincount(graph.concept_index, minlength=len(graph.concepts))
    assert per_concept.tolist() == list(graph.df)
    assert all(2 <= d <= 30 for d in graph.df)
    for c, w in zip(graph.concept_index.tolist(), graph.weight.tolist(), strict=True):
        assert w == pytest.approx(1 / math.log(1 + graph.df[c]), rel=1e-6)
    # A concept extracted from one unit only is pruned by min_df=2.
    assert "louvre museum" not in graph.concepts
    assert "louvre museum" in build_concept_graph(PARIS_UNITS, min_df=1).concepts


def test_max_df_as_count_and_as_share() -> None:
    by_count = build_concept_graph(PARIS_UNITS, max_df=2)
    assert "paris" not in by_count.concepts
    assert "eiffel tower" in by_count.concepts
    by_share = build_concept_graph(PARIS_UNITS, min_df=1, max_df=0.5)  # at most 1.5 units
    assert by_share.concepts
    assert set(by_share.df) == {1}


def test_containment_links_a_phrase_extracted_only_from_another_unit() -> None:
    x = (
        "The Mona Lisa is a half-length portrait painting by Leonardo da Vinci. The Mona Lisa "
        "hangs in the Louvre."
    )
    y = (
        "Tourists queue for hours every summer at the Eiffel Tower and the Arc de Triomphe, and "
        "many of them also want to see the mona lisa before they leave the city."
    )
    assert "mona lisa" in keyphrases(x, top=5)
    assert "mona lisa" not in keyphrases(y, top=5)
    units = [("x", x, ""), ("y", y, "")]
    contained = build_concept_graph(units, keyphrases_per_unit=5)
    assert contained.concepts == ("mona lisa",)
    assert _links(contained) == {("x", "mona lisa"), ("y", "mona lisa")}
    own_only = build_concept_graph(units, keyphrases_per_unit=5, link_by_containment=False)
    assert own_only.concepts == ()


def test_precomputed_keyphrases_and_cooccurrence_cap() -> None:
    phrases = {
        "u1": ["a", "b"], "u2": ["a", "b"], "u3": ["a", "b"],
        "u4": ["a", "c"], "u5": ["a", "c"],
        "u6": ["c", "d"], "u7": ["c", "d"],
        "u8": ["d"],
    }  # fmt: skip
    units = [(uid, "", "") for uid in phrases]
    kwargs = {"link_by_containment": False, "include_titles": False}
    graph = build_concept_graph(units, unit_keyphrases=list(phrases.values()), **kwargs)
    assert graph.concepts == ("a", "b", "c", "d")
    assert graph.df == (5, 3, 4, 3)
    assert graph.cooccurrence == ((0, 1, 3.0), (0, 2, 2.0), (2, 3, 2.0))
    assert graph.co_source.dtype == np.int32 and graph.co_weight.dtype == np.float32
    # min_cooccurrence=3 leaves only a-b.
    strict = build_concept_graph(
        units, unit_keyphrases=list(phrases.values()), min_cooccurrence=3, **kwargs
    )
    assert strict.cooccurrence == ((0, 1, 3.0),)
    # Cap 1: an edge survives only as the strongest of both ends; c's tie (a vs d) goes to
    # the smaller concept id, so exactly one of a-c, c-d is kept.
    capped = build_concept_graph(
        units, unit_keyphrases=list(phrases.values()), max_cooccurrence_edges_per_concept=1,
        **kwargs,
    )
    c_partner = min("a", "d", key=concept_id)
    expected_c_edge = (0, 2, 2.0) if c_partner == "a" else (2, 3, 2.0)
    assert capped.cooccurrence == ((0, 1, 3.0), expected_c_edge)
    degree = np.bincount(np.r_[capped.co_source, capped.co_target], minlength=4)
    assert degree.max() <= 1
    assert build_concept_graph(
        units, unit_keyphrases=list(phrases.values()), max_cooccurrence_edges_per_concept=0,
        **kwargs,
    ).cooccurrence == ()


def test_empty_and_one_unit_corpora_build_cleanly() -> None:
    empty = build_concept_graph([])
    assert empty.concepts == () and empty.unit_ids == () and empty.cooccurrence == ()
    assert empty.match_query("Who designed the Eiffel Tower?") == []
    assert ConceptGraph.from_bytes(empty.to_bytes()) == empty
    one = build_concept_graph([PARIS_UNITS[0]])
    assert one.unit_ids == ("a",)
    assert one.concepts == ()  # every concept has df 1 < min_df
    assert len(one.unit_index) == 0
    kept = build_concept_graph([PARIS_UNITS[0]], min_df=1)
    assert "eiffel tower" in kept.concepts
    assert set(kept.unit_index.tolist()) == {0}
    assert kept.cooccurrence == ()  # no pair shares two units
    blank = build_concept_graph([("z", "", ""), ("y", "😀", "")])
    assert blank.concepts == () and blank.unit_ids == ("y", "z")


def test_build_is_independent_of_unit_order_and_merges_repeated_ids() -> None:
    units = [*PARIS_UNITS, ("d", "The Louvre museum and the Eiffel Tower are in Paris.", "")]
    first = build_concept_graph(units)
    shuffled = units[:]
    random.Random(7).shuffle(shuffled)
    second = build_concept_graph(shuffled)
    assert first == second
    assert first.to_bytes() == second.to_bytes()
    doubled = build_concept_graph([*units, units[0]])
    assert doubled == first


def test_to_bytes_round_trip_and_bad_input() -> None:
    graph = build_concept_graph(PARIS_UNITS, min_df=1)
    data = graph.to_bytes()
    restored = ConceptGraph.from_bytes(data)
    assert restored == graph
    assert restored.cooccurrence == graph.cooccurrence
    assert restored.match_query("Paris") == graph.match_query("Paris")
    assert not restored.weight.flags.writeable
    with pytest.raises(StoreSchemaError):
        ConceptGraph.from_bytes(b"not a graph")
    # Another version is refused with a message naming it.
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    header = json.loads(arrays["header"].tobytes())
    header["version"] = 99
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    with pytest.raises(StoreSchemaError, match="99"):
        ConceptGraph.from_bytes(buffer.getvalue())


def test_match_query_returns_concept_indices_and_ngram_lengths() -> None:
    graph = build_concept_graph(PARIS_UNITS)
    matches = graph.match_query("Which company designed the Eiffel Tower in Paris?")
    named = [(graph.concepts[i], n) for i, n in matches]
    assert ("eiffel tower", 2) in named
    assert ("paris", 1) in named
    assert ("tower in paris", 3) in named
    assert len({i for i, _ in matches}) == len(matches)
    assert graph.match_query("What is the capital of Germany?") == []


def test_graph_over_cjk_units_links_by_substring() -> None:
    units = [
        ("z1", ZH, "北京"),
        ("z2", "故宫博物院位于北京市中心。", ""),
        ("z3", "长城是中国古代的军事防御工程。", "长城"),
    ]
    graph = build_concept_graph(units)
    links = _links(graph)
    assert {("z1", "北京"), ("z2", "北京"), ("z1", "故宫"), ("z2", "故宫")} <= links
    assert ("z3", "长城") in links
    assert [graph.concepts[i] for i, _ in graph.match_query("故宫在北京吗?")] == ["故宫", "北京"]


def test_invalid_parameters_raise_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="min_df"):
        build_concept_graph(PARIS_UNITS, min_df=0)
    with pytest.raises(ConfigurationError, match="max_df"):
        build_concept_graph(PARIS_UNITS, max_df=1.5)
    with pytest.raises(ValueError, match="one entry per unit"):
        build_concept_graph(PARIS_UNITS, unit_keyphrases=[["a"]])
