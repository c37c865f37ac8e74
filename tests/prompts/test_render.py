"""The one template mechanism renders every packaged prompt exactly as the old renderers did.

``rendered_v1.json`` holds, per packaged template, sample values and the messages the code
before the unification produced (`domain/extraction/format._fill`, `domain/graph/reports`,
`domain/prompts/render`, `str.format` at the retrieval and evaluation call sites), captured
before any change. The response cache is keyed by the messages and extraction records by
the template text, so any byte that moves here invalidates users' caches.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unified_kg_rag.domain.extraction.format import render_extraction_messages
from unified_kg_rag.domain.graph.report_context import ReportContext
from unified_kg_rag.domain.graph.reports import render_report_messages
from unified_kg_rag.domain.prompts.library import PACKAGED, packaged_names
from unified_kg_rag.domain.prompts.render import (
    fill,
    placeholders,
    render_messages,
    render_text,
    split_template,
)
from unified_kg_rag.evaluation.judges.common import render_prompt

pytestmark = pytest.mark.unit

EXPECTED = json.loads((Path(__file__).parent / "rendered_v1.json").read_text(encoding="utf-8"))


def _dump(messages: list) -> list[dict[str, str]]:  # type: ignore[type-arg]
    return [{"role": m.role, "content": m.content} for m in messages]


def test_the_capture_covers_every_packaged_template() -> None:
    # every template that existed before the unification; the claim and tune_* ones came
    # after it (nothing cached or stored was rendered from them by older code)
    new = [n for n in packaged_names() if n not in EXPECTED]
    assert new == [
        "extract_claims.v1", "tune_extract_note.v1", "tune_profile.v1", "tune_report_note.v1"
    ]
    # 27 at the base, 3 of the extraction schema and the 4 prompts that were string
    # constants in retrieval/answer.py and retrieval/strategies/lazy.py (captured on main)
    assert len(EXPECTED) == 34


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_packaged_template_renders_byte_identically(name: str) -> None:
    case = EXPECTED[name]
    template = PACKAGED.get(name)
    if name.endswith("_graph_schema.v1"):  # the schema step fills {schema_types} first
        template = template.replace("{schema_types}", case["values"]["schema_types"])
    if case["family"] == "split":
        got = _dump(render_messages(template, case["values"]))
    else:
        got = [{"role": "user", "content": render_text(template, case["values"])}]
    assert got == case["messages"]


def test_the_declared_placeholders_are_the_names_the_callers_fill() -> None:
    for name, case in EXPECTED.items():
        assert placeholders(PACKAGED.packaged(name)) == frozenset(case["values"]), name
    assert PACKAGED.placeholders("extract_graph") == {"text", "entity_types", "schema_types"}
    assert PACKAGED.placeholders("judge_pairwise") == {
        "criteria", "reply_shape", "question", "answer_1", "answer_2"}
    assert PACKAGED.required("extract_graph") == {"text"}
    assert PACKAGED.required("glean_graph") == {"text", "current_items"}
    assert PACKAGED.required("community_report") == {"context"}


def test_call_sites_render_through_the_one_mechanism() -> None:
    ext = EXPECTED["extract_graph.v1"]
    got = render_extraction_messages(
        ext["values"]["text"], entity_types=[ext["values"]["entity_types"]],
        template=PACKAGED.get("extract_graph.v1"),
    )  # fmt: skip
    assert _dump(got) == ext["messages"]
    # the unit text ends in blank lines: kept (values are inserted as given)
    assert got[-1].content.count("Alice met {Bob} at ACME.\n\n\n</text>") == 1
    rep = EXPECTED["community_report.v1"]
    ctx = ReportContext(text=rep["values"]["context"], truncated=False)
    got = render_report_messages(rep["values"]["community_name"], ctx,
                                 template=PACKAGED.get("community_report.v1"))  # fmt: skip
    assert _dump(got) == rep["messages"]
    judge = EXPECTED["judge_pairwise.v1"]
    system, user = render_prompt("judge_pairwise.v1", **judge["values"])
    assert [system, user] == [m["content"] for m in judge["messages"]]


def test_literal_expectations_of_representative_templates() -> None:
    # str.format's escapes: "{{{reply_shape}}}" is a brace, the value, a brace
    system, _ = render_prompt("judge_pairwise.v1", criteria="c", reply_shape='"x": 1',
                              question="q", answer_1="a", answer_2="b")  # fmt: skip
    assert '{"x": 1}' in system
    text = PACKAGED.text("query_entities.v1", {"question": "Who is {Bob}?"})
    assert text.endswith("Who is {Bob}?\n")
    assert '{"entities": ["..."]}' in text and "{{" not in text
    # community_report shows its JSON with single braces and no escapes: left as written
    report = PACKAGED.messages("community_report.v1", {"community_name": "C", "context": "X"})
    assert '{"summary": "A one-line statement of an insight"' in report[0].content


def test_fill_rules() -> None:
    assert fill("{a} {b} {{a}} }}", {"a": "{b}"}) == "{b} {b} {a} }"
    # without "{{" every brace that is no placeholder is kept: nested JSON survives
    assert fill('{"a": {"b": {x}}}', {"x": "1"}) == '{"a": {"b": 1}}'
    assert fill('{{"a": {{"b": {x}}}}}', {"x": "1"}) == '{"a": {"b": 1}}'
    # a split template's parts follow the whole template's mode
    system, user = render_messages('S {{"k": 1}}\n=== user ===\n{"j": {q}}}', {"q": "2"})
    assert (system.content, user.content) == ('S {"k": 1}', '{"j": 2}')
    assert placeholders("{a} {{b}} {{{c}}} {\"j\": 1} {d e}") == {"a", "c"}
    assert split_template("Sys\n\n=== user ===\nUser {text}\n") == ("Sys", "User {text}")
    assert split_template("Only user {text}") == ("", "Only user {text}")
    assert split_template("S\r\n=== user ===\r\nU\r\n") == ("S", "U")
    assert _dump(render_messages("  === user ===\n{q}", {"q": " x "})) == [
        {"role": "user", "content": " x "}]
