"""The extraction / gleaning prompts' messages and the lenient reader of their XML replies."""

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_kg_rag.domain.extraction.format import (
    ParsedExtraction,
    glean_merge,
    parse_extraction_reply,
    parse_gleaning_reply,
    render_extraction_messages,
    render_gleaning_messages,
    render_items,
)
from unified_kg_rag.domain.extraction.records import (
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionRecord,
)
from unified_kg_rag.domain.identity import entity_key
from unified_kg_rag.domain.prompts import load_prompt
from unified_kg_rag.domain.prompts.render import split_template
from unified_kg_rag.util.errors import ModelError, ModelOutputError

pytestmark = pytest.mark.unit


def ent(name: str, type_: str = "ORGANIZATION", desc: str = "d", conf: str = "8") -> str:
    return (
        f"<entity>\n<name>{name}</name>\n<type>{type_}</type>\n"
        f"<description>{desc}</description>\n<confidence>{conf}</confidence>\n"
        f"<span>span of {name}</span>\n</entity>\n"
    )


def rel(src: str, tgt: str, type_: str = "RELATED_TO", desc: str = "r", strength: str = "7") -> str:
    return (
        f"<relationship>\n<source>{src}</source>\n<target>{tgt}</target>\n<type>{type_}</type>\n"
        f"<description>{desc}</description>\n<strength>{strength}</strength>\n"
        f"<span>{src} and {tgt}</span>\n</relationship>\n"
    )


def reply(entities: str, relationships: str = "None") -> str:
    return f"<entities>\n{entities}</entities>\n<relationships>\n{relationships}</relationships>"


GOOD = reply(ent("Acme") + ent("Bob", "PERSON"), rel("Bob", "Acme", "WORKS_FOR"))


def names(parsed: ParsedExtraction) -> list[str]:
    return [e.name for e in parsed.entities]


# ----------------------------------------------------------------------------- clean replies


def test_clean_reply_reads_every_field() -> None:
    parsed = parse_extraction_reply(GOOD)
    assert parsed.entities[1] == ExtractedEntity(
        name="Bob", type="PERSON", description="d", confidence=8.0, span="span of Bob"
    )
    assert parsed.relationships == (
        ExtractedRelationship(
            source="Bob", target="Acme", type="WORKS_FOR", description="r", strength=7.0,
            span="Bob and Acme",
        ),
    )  # fmt: skip
    assert parsed.truncated is False


def test_none_sections_are_a_clean_empty_result() -> None:
    parsed = parse_extraction_reply("<entities>\nNone\n</entities>\n<relationships>N/A</relationships>")
    assert parsed == ParsedExtraction()
    assert parse_extraction_reply("<entities></entities><relationships>-</relationships>") == (
        ParsedExtraction()
    )
    assert parse_extraction_reply("None") == ParsedExtraction()


def test_section_with_prose_instead_of_records_is_empty() -> None:
    text = "<entities>No entities [explicitly] named.</entities><relationships/>"
    assert parse_extraction_reply(text) == ParsedExtraction()


# ----------------------------------------------------------------------------- wrappers


def test_reasoning_block_is_skipped() -> None:
    draft = reply(ent("Draft"), rel("Draft", "Acme"))
    answer = f"<entities>\n{ent('Acme')}</entities>"
    parsed = parse_extraction_reply(f"<think>\nFirst try:\n{draft}\nHmm.\n</think>\n{answer}")
    assert names(parsed) == ["Acme"]
    assert parsed.relationships == ()


def test_only_a_closing_think_takes_what_follows() -> None:
    draft = reply(ent("Draft"), rel("Draft", "Acme"))
    answer = f"<entities>\n{ent('Acme')}</entities>"
    parsed = parse_extraction_reply(f"Let me think. {draft}\n</think>\n\n{answer}")
    assert names(parsed) == ["Acme"]
    assert parsed.relationships == ()


def test_reasoning_block_after_the_answer_is_dropped() -> None:
    parsed = parse_extraction_reply(f"{GOOD}\n<think>Did I miss {ent('Draft')}?</think>")
    assert names(parsed) == ["Acme", "Bob"]


def test_reasoning_cut_before_any_record_raises() -> None:
    with pytest.raises(ModelOutputError, match="reasoning"):
        parse_extraction_reply("<think>The text mentions Acme and", finish_reason="length")


def test_code_fences_and_prose_around_the_xml() -> None:
    text = f"Here are the records you asked for:\n```xml\n{GOOD}\n```\nLet me know if you need more."
    parsed = parse_extraction_reply(text)
    assert names(parsed) == ["Acme", "Bob"]
    assert parsed.relationships[0].type == "WORKS_FOR"
    assert parsed.truncated is False


def test_prose_after_the_xml_naming_a_section_is_not_a_cut() -> None:
    parsed = parse_extraction_reply(GOOD + "\nI left <relationships> between minor people out.")
    assert names(parsed) == ["Acme", "Bob"]
    assert len(parsed.relationships) == 1
    assert parsed.truncated is False


def test_items_without_section_tags_are_read() -> None:
    parsed = parse_extraction_reply(ent("Acme") + rel("Acme", "Bob"))
    assert names(parsed) == ["Acme"]
    assert [(r.source, r.target) for r in parsed.relationships] == [("Acme", "Bob")]


# ----------------------------------------------------------------------------- truncation


def test_cut_reply_keeps_complete_records_and_is_truncated() -> None:
    full = reply(ent("Acme") + ent("Bob") + ent("Carol"))
    cut = full[: full.index("<name>Carol") + 8]
    parsed = parse_extraction_reply(cut)
    assert names(parsed) == ["Acme", "Bob"]
    assert parsed.truncated is True
    assert parsed.relationships == ()


def test_cut_in_relationships_keeps_entities_and_complete_relationships() -> None:
    full = reply(ent("Acme") + ent("Bob"), rel("Bob", "Acme") + rel("Acme", "Bob"))
    cut = full[: full.rindex("<strength>")]
    parsed = parse_extraction_reply(cut, finish_reason="length")
    assert names(parsed) == ["Acme", "Bob"]
    assert [(r.source, r.target) for r in parsed.relationships] == [("Bob", "Acme")]
    assert parsed.truncated is True


def test_cut_before_the_first_record_is_never_a_clean_empty() -> None:
    parsed = parse_extraction_reply("<entities>\n<entity>\n<name>Ac")
    assert parsed.entities == ()
    assert parsed.truncated is True
    assert parse_extraction_reply("<entities>\n").truncated is True
    assert parse_extraction_reply("```xml\n<entities>\n```").truncated is True


def test_finish_reason_length_marks_even_closed_xml_truncated() -> None:
    assert parse_extraction_reply(GOOD, finish_reason="length").truncated is True
    assert names(parse_extraction_reply(GOOD, finish_reason="length")) == ["Acme", "Bob"]


# ----------------------------------------------------------------------------- repeats


def test_repeated_section_takes_the_last_complete_one() -> None:
    text = (
        f"<entities>\n{ent('Acme')}</entities>\nWait, I missed one. Corrected:\n"
        f"<entities>\n{ent('Acme', desc='fixed')}{ent('Bob')}</entities>\n"
        f"<relationships>\n{rel('Acme', 'Bob')}</relationships>\n"
        f"<relationships>\n{rel('Bob', 'Acme')}</relationships>"
    )
    parsed = parse_extraction_reply(text)
    assert names(parsed) == ["Acme", "Bob"]
    assert parsed.entities[0].description == "fixed"
    assert [(r.source, r.target) for r in parsed.relationships] == [("Bob", "Acme")]
    assert parsed.truncated is False


def test_a_cut_repeat_falls_back_to_the_complete_section() -> None:
    text = f"<entities>\n{ent('Acme')}{ent('Bob')}</entities>\n<entities>\n{ent('Carol')}<entity><na"
    parsed = parse_extraction_reply(text)
    assert names(parsed) == ["Acme", "Bob"]
    assert parsed.truncated is True


def test_repeated_name_in_a_section_keeps_the_last_item() -> None:
    text = reply(ent("Acme", desc="first") + ent("Bob") + ent("ACME ", desc="second"))
    parsed = parse_extraction_reply(text)
    assert [(e.name, e.description) for e in parsed.entities] == [("ACME", "second"), ("Bob", "d")]


def test_relationships_dedup_by_source_target_and_type() -> None:
    rels = (
        rel("Bob", "Acme", "WORKS_FOR", desc="a")
        + rel("bob", "acme", "works for", desc="b")
        + rel("Bob", "Acme", "OWNS", desc="c")
    )
    parsed = parse_extraction_reply(reply(ent("Bob"), rels))
    assert [(r.type, r.description) for r in parsed.relationships] == [
        ("WORKS_FOR", "b"),
        ("OWNS", "c"),
    ]


# ----------------------------------------------------------------------------- values


def test_delimiters_quotes_and_markup_inside_descriptions() -> None:
    desc = 'Uses the "a|b" and x<|>y ## formats;\nalso a < b & c > d, and <b>bold</b> text.'
    parsed = parse_extraction_reply(reply(ent("Acme", desc=desc), rel("Acme", "Bob", desc=desc)))
    assert parsed.entities[0].description == desc
    assert parsed.relationships[0].description == desc


def test_xml_escapes_are_decoded() -> None:
    parsed = parse_extraction_reply(reply(ent("AT&amp;T", desc="x &lt; y &quot;q&quot; &#39;s")))
    assert parsed.entities[0].name == "AT&T"
    assert parsed.entities[0].description == "x < y \"q\" 's"


@pytest.mark.parametrize(
    "name",
    ["C++", "C#", "AT&T", ".NET", "$1,000 penalty", "Star Wars: A New Hope", "삼성전자", "北京大学",
     "東京大学", "トヨタ自動車"],
)  # fmt: skip
def test_display_names_are_kept(name: str) -> None:
    parsed = parse_extraction_reply(reply(ent(name), rel(name, "Acme")))
    assert names(parsed) == [name]
    assert parsed.relationships[0].source == name


def test_names_are_trimmed_collapsed_and_unquoted() -> None:
    parsed = parse_extraction_reply(reply(ent('  "Acme \n  Corp "  ') + ent("“Bob”") + ent("X.")))
    assert names(parsed) == ["Acme Corp", "Bob", "X."]


def test_items_without_a_name_are_skipped() -> None:
    text = reply(ent("") + ent("Acme"), rel("", "Acme") + rel("Acme", "  ") + rel("Acme", "Bob"))
    parsed = parse_extraction_reply(text)
    assert names(parsed) == ["Acme"]
    assert [(r.source, r.target) for r in parsed.relationships] == [("Acme", "Bob")]


def test_records_that_all_lack_names_raise() -> None:
    with pytest.raises(ModelOutputError, match="name"):
        parse_extraction_reply(reply(ent("") + ent('""')))


def test_types_are_upper_snake_case() -> None:
    parsed = parse_extraction_reply(reply(ent("Acme", " public company "), rel("A", "B", "works for")))
    assert parsed.entities[0].type == "PUBLIC_COMPANY"
    assert parsed.relationships[0].type == "WORKS_FOR"


@pytest.mark.parametrize(
    ("raw", "confidence", "strength"),
    [
        ("8", 8.0, 8.0),
        ("8/10", 8.0, 8.0),
        ("4/5", 8.0, 8.0),
        ("7.5", 7.5, 7.5),
        ("80%", 8.0, 8.0),
        ("15", 10.0, 10.0),
        ("0", 1.0, 1.0),
        ("high", None, 5.0),
        ("", None, 5.0),
    ],
)
def test_scores_are_read_and_clamped(raw: str, confidence: float | None, strength: float) -> None:
    parsed = parse_extraction_reply(reply(ent("Acme", conf=raw), rel("Acme", "B", strength=raw)))
    assert parsed.entities[0].confidence == confidence
    assert parsed.relationships[0].strength == strength


def test_missing_fields_get_defaults() -> None:
    text = "<entities><entity><name>Acme</name></entity></entities><relationships><relationship>"
    text += "<source>Acme</source><target>Bob</target></relationship></relationships>"
    parsed = parse_extraction_reply(text)
    assert parsed.entities == (ExtractedEntity(name="Acme"),)
    assert parsed.relationships == (ExtractedRelationship(source="Acme", target="Bob"),)
    assert parsed.unscored == frozenset({("acme", "bob", "")})


def test_field_missing_its_end_tag_runs_to_the_next_field() -> None:
    text = "<entities><entity><name>Acme<type>ORG</type><description>A firm.</entity></entities>"
    assert parse_extraction_reply(text).entities == (
        ExtractedEntity(name="Acme", type="ORG", description="A firm."),
    )


# ----------------------------------------------------------------------------- tags in values


def test_record_tags_inside_a_value_are_text() -> None:
    desc = "Declares elements such as <entity> and <name> for documents."
    text = (
        "<entities><entity><name>XML Schema</name><type>CONCEPT</type>"
        f"<description>{desc}</description><confidence>8</confidence><span>x</span></entity>"
        f"{ent('Acme')}</entities>"
    )
    parsed = parse_extraction_reply(text)
    assert parsed.entities[0] == ExtractedEntity(
        name="XML Schema", type="CONCEPT", description=desc, confidence=8.0, span="x"
    )
    assert names(parsed) == ["XML Schema", "Acme"]
    assert parsed.truncated is False


def test_section_tags_inside_values_neither_split_nor_close_a_section() -> None:
    desc = "Wraps <entity> items in <entities> and ends with </entities>; then <relationships>."
    rel_desc = "A <relationship> holds <source>, <target> and </relationships> closes the list."
    text = reply(
        ent("Schema", desc=desc) + ent("HTML <span> element", desc="<name>") + ent("Acme"),
        rel("Schema", "Acme", desc=rel_desc) + rel("Acme", "Schema"),
    )
    parsed = parse_extraction_reply(text)
    assert [(e.name, e.description) for e in parsed.entities] == [
        ("Schema", desc), ("HTML <span> element", "<name>"), ("Acme", "d")
    ]  # fmt: skip
    assert [(r.source, r.description) for r in parsed.relationships] == [
        ("Schema", rel_desc), ("Acme", "r")
    ]  # fmt: skip
    assert parsed.truncated is False


def test_a_value_whose_end_tag_follows_the_record_end_runs_to_the_record_end() -> None:
    text = (
        "<entities><entity><name>A</name><description>open <b>x</entity>"
        "<entity><name>B</name><description>b</description></entity></entities>"
    )
    parsed = parse_extraction_reply(text)
    assert [(e.name, e.description) for e in parsed.entities] == [("A", "open <b>x"), ("B", "b")]


def test_tags_in_a_value_of_a_record_without_end_tag() -> None:
    text = (
        "<entities><entity><name>A</name><description>uses <entity> tags</description>"
        "<entity><name>B</name><description>b</description></entities>"
    )
    parsed = parse_extraction_reply(text)
    assert [(e.name, e.description) for e in parsed.entities] == [("A", "uses <entity> tags"), ("B", "b")]
    # the field and its record both lack end tags: the field ends at the next tag, as before
    text = "<entities><entity><name>A<type>ORG</type><entity><name>B</name></entities>"
    parsed = parse_extraction_reply(text)
    assert [(e.name, e.type) for e in parsed.entities] == [("A", "ORG"), ("B", "")]


def test_a_cut_record_with_tags_in_a_value_is_dropped() -> None:
    cut = "<entities>\n" + ent("Acme") + (
        "<entity><name>X</name><description>Declares <entity> and <name>.</description><conf"
    )
    parsed = parse_extraction_reply(cut)
    assert names(parsed) == ["Acme"]
    assert parsed.truncated is True


# ----------------------------------------------------------------------------- character refs


def test_html_named_references_are_decoded() -> None:
    text = reply(
        ent("Caf&eacute; Luna", desc="Caf&eacute;&nbsp;Luna &amp; co") + ent("Banco&nbsp;Santander"),
        rel("Caf&eacute; Luna", "Banco&nbsp;Santander", "banks&nbsp;with"),
    )
    parsed = parse_extraction_reply(text)
    assert names(parsed) == ["Café Luna", "Banco Santander"]
    assert parsed.entities[0].description == "Café\xa0Luna & co"
    rel_ = parsed.relationships[0]
    assert (rel_.source, rel_.target, rel_.type) == ("Café Luna", "Banco Santander", "BANKS_WITH")


@pytest.mark.parametrize(
    "raw",
    ["AT&T", "R&D", "M&Ms", "a < b", "salt&nothing", "&copy 2020", "&bogus; Ltd", "x &#0; y"],
)
def test_raw_ampersands_and_unknown_references_are_kept(raw: str) -> None:
    parsed = parse_extraction_reply(reply(ent(raw, desc=raw), rel(raw, "Acme", desc=raw)))
    assert [(e.name, e.description) for e in parsed.entities] == [(raw, raw)]
    assert (parsed.relationships[0].source, parsed.relationships[0].description) == (raw, raw)


def test_a_lone_ampersand_value_is_kept() -> None:
    assert parse_extraction_reply(reply(ent("Acme", desc="&"))).entities[0].description == "&"


def test_unicode_spaces_in_names_collapse() -> None:
    text = reply(ent("Banco\xa0Santander") + ent("\u3000Acme\u2007\u202fCorp "))
    assert names(parse_extraction_reply(text)) == ["Banco Santander", "Acme Corp"]


def test_references_in_values_render_and_parse_back_unchanged() -> None:
    entities = [
        ExtractedEntity(name="Caf&eacute; Luna", description="&nbsp; &amp; &#39; AT&T &copy"),
        ExtractedEntity(name="AT&T", description="R&D & M&Ms, a < b"),
    ]
    rendered = render_items(entities, [])
    assert "<name>Caf&amp;eacute; Luna</name>" in rendered
    assert "<name>AT&T</name>" in rendered
    assert parse_extraction_reply(rendered).entities == tuple(entities)


# ----------------------------------------------------------------------------- unusable names


@pytest.mark.parametrize("bad", ["...", "?", "!", "—", "***", '"?"', "\u200b", "&nbsp;"])
def test_names_without_letters_or_digits_are_skipped(bad: str) -> None:
    text = reply(ent(bad) + ent("Acme"), rel(bad, "Acme") + rel("Acme", bad) + rel("Acme", "Bob"))
    parsed = parse_extraction_reply(text)
    assert names(parsed) == ["Acme"]
    assert [(r.source, r.target) for r in parsed.relationships] == [("Acme", "Bob")]


def test_records_that_all_have_punctuation_names_raise() -> None:
    with pytest.raises(ModelOutputError, match="name"):
        parse_extraction_reply(reply(ent("...") + ent("—"), rel("?", "!")))


def test_format_characters_are_removed_from_names_and_types() -> None:
    text = reply(
        ent("C\u200bD", "PER\u200bSON", desc="keeps\u200bit")
        + ent("\ufeffAc\u2060me") + ent("Jo\u200dhn \u200b Smith") + ent("Acme\u200d"),
        rel("C\u200bD", "\ufeffAcme", "works\u200b for"),
    )
    parsed = parse_extraction_reply(text)
    assert names(parsed) == ["CD", "Acme", "John Smith"]
    assert (parsed.entities[0].type, parsed.entities[0].description) == ("PERSON", "keeps\u200bit")
    rel_ = parsed.relationships[0]
    assert (rel_.source, rel_.target, rel_.type) == ("CD", "Acme", "WORKS_FOR")


# ----------------------------------------------------------------------------- failures


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_reply_raises(text: str) -> None:
    with pytest.raises(ModelOutputError, match="empty"):
        parse_extraction_reply(text)


@pytest.mark.parametrize(
    "text",
    [
        '("entity"<|>ACME<|>ORGANIZATION<|>A company)##("entity"<|>BOB<|>PERSON<|>A man)',
        '{"entities": [{"name": "Acme", "type": "ORGANIZATION"}], "relationships": []}',
        "The text talks about Acme, a company that employs Bob.",
        "Nothing much here, but Acme is a company that employs Bob.",
    ],
)
def test_another_format_entirely_raises(text: str) -> None:
    with pytest.raises(ModelOutputError, match="no <entities> section"):
        parse_extraction_reply(text)


def test_json_inside_a_section_raises() -> None:
    with pytest.raises(ModelOutputError, match="no <entity> record"):
        parse_extraction_reply('<entities>[{"name": "Acme"}]</entities>')


def test_model_output_error_is_a_non_transient_model_error() -> None:
    with pytest.raises(ModelError) as info:
        parse_extraction_reply("")
    assert isinstance(info.value, ModelOutputError)
    assert info.value.transient is False
    assert "\n" not in str(info.value)


# ----------------------------------------------------------------------------- gleaning


@pytest.mark.parametrize(
    "text", ["", "  \n", "<think>nothing to add</think>", reply("None"), "None."]
)
def test_gleaning_reply_with_nothing_missing_is_empty(text: str) -> None:
    assert parse_gleaning_reply(text) == ParsedExtraction()


def test_gleaning_reply_in_another_format_raises() -> None:
    with pytest.raises(ModelOutputError):
        parse_gleaning_reply("Sure! Here are the missing entities: Acme, Bob.")


def test_glean_merge_corrects_in_place_and_appends() -> None:
    current = parse_extraction_reply(GOOD)
    gleaned = parse_gleaning_reply(
        reply(ent("acme", "COMPANY", desc="fixed", conf="") + ent("Carol", "PERSON"),
              rel("Carol", "Acme", "WORKS_FOR", strength="") + rel("bob", "ACME", "works_for", strength="3"))
    )  # fmt: skip
    merged = glean_merge(current.entities, current.relationships, gleaned)
    assert merged.added is True
    assert merged.entities[0] == ExtractedEntity(
        name="Acme", type="COMPANY", description="fixed", confidence=8.0, span="span of acme"
    )
    assert [e.name for e in merged.entities] == ["Acme", "Bob", "Carol"]
    assert [(r.source, r.strength) for r in merged.relationships] == [("Bob", 3.0), ("Carol", 5.0)]


def test_glean_merge_a_correction_alone_is_added() -> None:
    current = parse_extraction_reply(GOOD)
    gleaned = parse_gleaning_reply(reply(ent("Bob", "PERSON", desc="An engineer.")))
    merged = glean_merge(current.entities, current.relationships, gleaned)
    assert merged.added is True
    assert [(e.name, e.description) for e in merged.entities] == [("Acme", "d"), ("Bob", "An engineer.")]
    assert merged.relationships == current.relationships


def test_glean_merge_identical_repeat_is_not_added() -> None:
    current = parse_extraction_reply(GOOD)
    merged = glean_merge(current.entities, current.relationships, parse_gleaning_reply(GOOD))
    assert merged.added is False
    assert merged.entities == current.entities
    assert merged.relationships == current.relationships


def test_glean_merge_unscored_correction_keeps_old_strength() -> None:
    current = parse_extraction_reply(GOOD)
    gleaned = parse_gleaning_reply(reply("None", rel("Bob", "Acme", "WORKS_FOR", strength="")))
    merged = glean_merge(current.entities, current.relationships, gleaned)
    assert merged.relationships == current.relationships
    assert merged.added is False
    empty = glean_merge(current.entities, current.relationships, parse_gleaning_reply(""))
    assert empty.added is False


# ----------------------------------------------------------------------------- rendering


def test_split_template() -> None:
    assert split_template("Sys\n\n=== user ===\nUser {text}\n") == ("Sys", "User {text}")
    assert split_template("Only user {text}") == ("", "Only user {text}")


def test_extraction_messages_fill_placeholders_once() -> None:
    text = "Code: {entity_types} and {text} and {current_items}"
    messages = render_extraction_messages(
        text, entity_types=["PERSON", "ORGANIZATION"], template=load_prompt("extract_graph.v1")
    )
    assert [m.role for m in messages] == ["system", "user"]
    assert "Entity types: PERSON, ORGANIZATION" in messages[0].content
    assert f"<text>\n{text}\n</text>" in messages[1].content
    assert "<current_items>" not in messages[1].content
    assert "{entity_types}" not in messages[0].content


def test_template_without_system_part_gives_one_message() -> None:
    messages = render_extraction_messages("T", entity_types=["X"], template="{entity_types}: {text}")
    assert [(m.role, m.content) for m in messages] == [("user", "X: T")]


def test_gleaning_messages_list_current_items() -> None:
    current = parse_extraction_reply(GOOD)
    record = ExtractionRecord(
        fingerprint="f", entities=current.entities, relationships=current.relationships
    )
    messages = render_gleaning_messages(
        "Bob works at Acme.", record, entity_types=["PERSON"], template=load_prompt("glean_graph.v1")
    )
    user = messages[1].content
    assert "<text>\nBob works at Acme.\n</text>" in user
    block = user[user.index("<current_items>") : user.index("</current_items>")]
    assert parse_extraction_reply(block) == current


def test_render_items_empty_sections_hold_none() -> None:
    assert render_items([], []) == "<entities>\nNone\n</entities>\n<relationships>\nNone\n</relationships>"
    assert parse_extraction_reply(render_items([], [])) == ParsedExtraction()


# ----------------------------------------------------------------------------- round trip

_TRICKY = st.sampled_from(
    ["<", "&", '"', "'", "&amp;", "&#39;", "&eacute;", "&nbsp;", "&copy", "AT&T", "</name>",
     "<entity>", "</relationships>", "</think>", "<|>", "|", "##", "\n", "삼성", "東京", "カナ", "é",
     " ", "\xa0", "\u200b", "..."]
)  # fmt: skip
_TEXT = st.lists(st.one_of(st.text(max_size=5), _TRICKY), max_size=6).map("".join)


def _display(text: str) -> str:
    """The names the parser keeps as they are: no format characters, spaces collapsed."""
    return " ".join("".join(c for c in text if unicodedata.category(c) != "Cf").split())


_NAME = _TEXT.map(_display).filter(
    lambda s: s[:1] not in "\"'“‘「『«`" and any(c.isalnum() for c in s) and entity_key(s) != ""
)
_DESC = _TEXT.map(str.strip)
_TYPE = st.sampled_from(["", "PERSON", "ORGANIZATION", "GEO_LOCATION", "인물"])
_SCORE = st.one_of(st.integers(1, 10).map(float), st.floats(1, 10, allow_nan=False))
_ENTITIES = st.lists(
    st.builds(ExtractedEntity, name=_NAME, type=_TYPE, description=_DESC,
              confidence=st.none() | _SCORE, span=_DESC),
    max_size=4, unique_by=lambda e: entity_key(e.name),
)  # fmt: skip
_RELATIONSHIPS = st.lists(
    st.builds(ExtractedRelationship, source=_NAME, target=_NAME, type=_TYPE, description=_DESC,
              strength=_SCORE, span=_DESC),
    max_size=4, unique_by=lambda r: (entity_key(r.source), entity_key(r.target), entity_key(r.type)),
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(entities=_ENTITIES, relationships=_RELATIONSHIPS)
def test_rendered_items_parse_back_unchanged(
    entities: list[ExtractedEntity], relationships: list[ExtractedRelationship]
) -> None:
    rendered = render_items(entities, relationships)
    parsed = parse_extraction_reply(rendered)
    assert parsed.entities == tuple(entities)
    assert parsed.relationships == tuple(relationships)
    assert parsed.truncated is False
