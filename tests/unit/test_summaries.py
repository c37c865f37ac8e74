"""Unit tests of description summaries: trigger, batching and the prompt."""

from __future__ import annotations

import pytest

from unified_kg_rag.domain.graph.summaries import (
    SUMMARY_PROMPT,
    descriptions_to_summarize,
    relationship_summary_name,
    render_summary_messages,
    summary_batches,
)
from unified_kg_rag.domain.prompts import load_prompt
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter

pytestmark = pytest.mark.unit

COUNT = EstimateTokenCounter().count


def words(n: int) -> str:
    return " ".join(["word"] * n)  # "word" is one estimated token


def test_batches_are_greedy_and_keep_order() -> None:
    fragments = [words(4), words(3), words(5), words(2), words(9)]
    batches = summary_batches(fragments, max_input_tokens=8, count=COUNT)
    assert batches == [[words(4), words(3)], [words(5), words(2)], [words(9)]]
    assert [f for batch in batches for f in batch] == fragments


def test_a_fragment_over_the_limit_goes_alone() -> None:
    fragments = [words(2), words(20), words(2), words(2)]
    batches = summary_batches(fragments, max_input_tokens=5, count=COUNT)
    assert batches == [[words(2)], [words(20)], [words(2), words(2)]]


def test_batches_edge_cases() -> None:
    assert summary_batches([], max_input_tokens=5, count=COUNT) == []
    with pytest.raises(ValueError, match="at least 1"):
        summary_batches(["a"], max_input_tokens=0, count=COUNT)


def test_descriptions_to_summarize_uses_the_token_budget() -> None:
    fragments = {
        "long": (words(30), words(30)),
        "short": (words(3), words(3)),
        "single": (words(500),),
    }
    assert descriptions_to_summarize(fragments, max_description_tokens=50, count=COUNT) == [
        "long"
    ]
    assert descriptions_to_summarize(
        fragments, max_description_tokens=50, count=COUNT, min_fragments=1
    ) == ["long", "single"]


def test_rendered_prompt_carries_the_markers() -> None:
    template = load_prompt(SUMMARY_PROMPT)
    messages = render_summary_messages(
        "Ada Lovelace", ["A mathematician.", "Wrote\nthe first program."],
        max_words=120, template=template,
    )  # fmt: skip
    assert [m.role for m in messages] == ["system", "user"]
    system, user = messages[0].content, messages[1].content
    assert "at most 120 words" in system
    assert "<name>Ada Lovelace</name>" in user
    assert "<descriptions>\n- A mathematician.\n- Wrote the first program.\n</descriptions>" in user
    assert "=== user ===" not in system + user
    assert "{" not in system + user


def test_braces_in_values_are_not_placeholders() -> None:
    template = "S {max_words}\n=== user ===\n<name>{name}</name>\n<descriptions>\n{descriptions}\n</descriptions>"
    messages = render_summary_messages(
        "{descriptions}", ["uses {name} literally"], max_words=7, template=template
    )
    assert messages[0].content == "S 7"
    assert messages[1].content == (
        "<name>{descriptions}</name>\n<descriptions>\n- uses {name} literally\n</descriptions>"
    )


def test_template_without_separator_is_one_user_message() -> None:
    messages = render_summary_messages("X", ["a"], max_words=5, template="{name}: {descriptions}")
    assert [(m.role, m.content) for m in messages] == [("user", "X: - a")]


def test_relationship_summary_name() -> None:
    assert relationship_summary_name("A", "B", "KNOWS") == "A -> B (KNOWS)"
    assert relationship_summary_name("A", "B", "") == "A -> B"
