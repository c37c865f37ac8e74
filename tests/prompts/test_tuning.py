"""The pure parts of prompt tuning: the sample, the lenient profile reading, the adapted texts."""

from __future__ import annotations

import json

import pytest

from unified_kg_rag.domain.prompts.library import PACKAGED
from unified_kg_rag.domain.prompts.tuning import (
    adapted_prompts,
    parse_profile,
    profile_messages,
    sample_indices,
)
from unified_kg_rag.util.errors import ModelOutputError

pytestmark = pytest.mark.unit

REPLY = {
    "Domain": "maritime law", "persona": "A lawyer.", "language": "German",
    "entity_types": ["vessel", {"name": "Port Authority", "description": "Runs a port.",
                                "synonyms": ["harbour board", 3]}, {"name": "VESSEL"}, {}],
    "relationship_types": [{"name": "registered in"}],
    "patterns": [["VESSEL", "REGISTERED_IN", "PORT_AUTHORITY"], ["VESSEL", "X", "VESSEL"], "no"],
}  # fmt: skip


def test_sample_indices_are_even_and_deterministic() -> None:
    assert sample_indices(10, 4) == [0, 2, 5, 7]
    assert sample_indices(3, 15) == [0, 1, 2]
    assert sample_indices(0, 5) == [] and sample_indices(5, 0) == []


def test_profile_is_read_leniently_and_normalised() -> None:
    reply = "<think>hmm {</think>Sure:\n```json\n" + json.dumps(REPLY) + "\n```\nDone."
    profile = parse_profile(reply)
    assert profile.domain == "maritime law" and profile.language == "German"
    assert [t.name for t in profile.entity_types] == ["VESSEL", "PORT_AUTHORITY"]
    assert profile.entity_types[1].synonyms == ("harbour board",)
    assert [t.name for t in profile.relationship_types] == ["REGISTERED_IN"]
    assert profile.patterns == (("VESSEL", "REGISTERED_IN", "PORT_AUTHORITY"),)
    assert parse_profile(json.dumps(REPLY), language="Dutch").language == "Dutch"


def test_a_missing_language_is_an_error_unless_given() -> None:
    reply = json.dumps({**REPLY, "language": " "})
    with pytest.raises(ModelOutputError, match=r"^the profile reply lacks 'language'$"):
        parse_profile(reply)
    assert parse_profile(reply, language="Greek").language == "Greek"
    with pytest.raises(ModelOutputError, match="'entity_types' names no type"):
        parse_profile(json.dumps({**REPLY, "entity_types": [{}, 5]}))


def test_adapted_prompts_keep_placeholders_and_escape_the_profile() -> None:
    profile = parse_profile(json.dumps({**REPLY, "domain": "law {text} of the sea"}))
    texts = adapted_prompts(PACKAGED, profile)
    extract = texts["extract_graph.v1"]
    assert "this domain: law (text) of the sea." in extract
    messages = PACKAGED.with_override("extract_graph", extract, "x").messages(
        "extract_graph", {"text": "T", "entity_types": "VESSEL"})
    assert "this domain: law (text) of the sea." in messages[0].content
    assert messages[1].content.count("<text>\nT\n</text>") == 1
    assert "- PORT_AUTHORITY: Runs a port." in messages[0].content
    assert "- VESSEL\n" in messages[0].content


def test_profile_messages_number_the_passages() -> None:
    system, user = profile_messages(PACKAGED, ["a  b\nc", "{x}"], language=None)
    assert "[1] a b c\n\n[2] {x}" in user.content and "Here are 2 sample" in user.content
    assert '"language": the language most of the passages are written in' in system.content
    assert '{\n  "domain"' in system.content  # the template's doubled braces, unescaped


def test_type_names_of_any_script_are_kept() -> None:
    reply = {**REPLY, "entity_types": ["人物", {"name": "组织"}, "Straße", "città d'arte"],
             "relationship_types": ["任职于"], "patterns": [["人物", "任职于", "组织"]]}
    profile = parse_profile(json.dumps(reply, ensure_ascii=False))
    assert [t.name for t in profile.entity_types] == ["人物", "组织", "STRASSE", "CITTÀ_D_ARTE"]
    assert [t.name for t in profile.relationship_types] == ["任职于"]
    assert profile.patterns == (("人物", "任职于", "组织"),)


def test_a_cut_off_reply_says_it_holds_no_complete_profile() -> None:
    whole = json.dumps(REPLY)
    cut = whole[: whole.index('"relationship_types"') - 2]  # inside the entity type list
    with pytest.raises(ModelOutputError,
                       match=r"^the profile reply holds no complete profile object: "):
        parse_profile(cut)


def test_a_persona_without_a_full_stop_still_reads_as_a_sentence() -> None:
    profile = parse_profile(json.dumps({**REPLY, "persona": "A business analyst"}))
    report = adapted_prompts(PACKAGED, profile)["community_report.v1"]
    assert "Write for this reader: A business analyst. Write the report in" in report
    kept = parse_profile(json.dumps({**REPLY, "persona": "A lawyer?"}))
    assert "reader: A lawyer? Write" in adapted_prompts(PACKAGED, kept)["community_report.v1"]
