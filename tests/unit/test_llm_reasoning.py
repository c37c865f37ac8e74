"""Reasoning-block removal, whole and streamed (adapters/llm/reasoning.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_kg_rag.adapters.llm.reasoning import ReasoningFilter, strip_reasoning

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("<think>plan the answer</think>\n\nParis.", "Paris."),
        ("  <think>\nstep 1\nstep 2\n</think>  Paris.  ", "Paris."),
        ("the template opened the block\n</think>\nParis.", "Paris."),
        ("Paris <think>aside</think> is the capital.", "Paris  is the capital."),
        ("<think>never closed because max_tokens", ""),
        ("No reasoning here.", "No reasoning here."),
        ("a < b and <th is not a tag", "a < b and <th is not a tag"),
        ("<thinking>other tag</thinking>", "<thinking>other tag</thinking>"),
        ("", ""),
    ],
)
def test_strip_reasoning(raw: str, clean: str) -> None:
    assert strip_reasoning(raw) == clean


def feed_in_chunks(text: str, cuts: list[int], holdback: int | None) -> str:
    flt = ReasoningFilter(holdback_chars=holdback)
    out: list[str] = []
    start = 0
    for cut in [*sorted({c % (len(text) + 1) for c in cuts}), len(text)]:
        out.append(flt.feed(text[start:cut]))
        start = cut
    out.append(flt.finish())
    return "".join(out)


pieces = st.sampled_from(
    ["<think>", "</think>", "<", "<th", "</", "think", " ", "\n", "answer", "x", "é", ">"]
)


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(pieces, max_size=25), cuts=st.lists(st.integers(0, 200), max_size=12))
def test_property_streaming_equals_whole_text(parts: list[str], cuts: list[int]) -> None:
    text = "".join(parts)
    assert feed_in_chunks(text, cuts, holdback=10_000) == strip_reasoning(text)


def test_stream_releases_text_after_the_holdback() -> None:
    flt = ReasoningFilter(holdback_chars=20)
    assert flt.feed("short") == ""  # could still be reasoning before a lone </think>
    released = flt.feed(" answer that is long enough")
    assert released == "short answer that is long enough"
    assert flt.feed(" more") == " more"
    assert flt.finish() == ""


def test_stream_drops_a_leading_block_without_waiting_for_the_holdback() -> None:
    flt = ReasoningFilter(holdback_chars=10_000)
    assert flt.feed("<think>reason") == ""
    assert flt.feed("ing</think>\n\nThe ") == "The"
    assert flt.feed("answer") == " answer"
    assert flt.finish() == ""


def test_holdback_zero_streams_the_first_characters_at_once() -> None:
    flt = ReasoningFilter(holdback_chars=0)
    assert flt.feed("Barn owls") == "Barn owls"  # no wait for a lone </think>
    assert flt.feed(" hunt voles.") == " hunt voles."
    assert flt.finish() == ""


@pytest.mark.parametrize(("holdback", "first"), [(0, "Barn"), (4096, "")])
def test_wrapped_models_hold_back_what_llm_reasoning_holdback_chars_says(
    holdback: int, first: str
) -> None:
    """`wrap_chat_model` passes ``llm.reasoning_holdback_chars`` to the reasoning filter."""
    import asyncio
    from collections.abc import AsyncIterator

    from unified_kg_rag.adapters.llm.middleware import wrap_chat_model
    from unified_kg_rag.config.models import LLMConfig

    class Chunks:
        model_name = "chunks"

        async def complete(self, *args: object, **kwargs: object) -> object:
            raise AssertionError("streamed only")

        async def stream(self, *args: object, **kwargs: object) -> AsyncIterator[str]:
            for piece in ("Barn ", "owls ", "hunt ", "voles."):
                yield piece

    model = wrap_chat_model(Chunks(), LLMConfig(reasoning_holdback_chars=holdback), None)  # type: ignore[arg-type]

    async def read() -> list[str]:
        return [p async for p in model.stream([])]

    pieces = [p for p in asyncio.run(read()) if p]
    assert pieces[0] == (first or "Barn owls hunt voles.")  # held back: all at the end
    assert "".join(pieces) == "Barn owls hunt voles."
