"""The chat protocols' shared mapping: model names, a chat as one chain request, footnotes."""

from __future__ import annotations

import pytest

from unified_kg_rag.domain.models import RAGOutput, Source
from unified_kg_rag.retrieval.chain import PriorTurn
from unified_kg_rag.service.chat_answer import chat_input, footnotes, strip_footnotes
from unified_kg_rag.service.chat_models import ChatModelRef, parse_model
from unified_kg_rag.util.errors import UsageError


@pytest.mark.parametrize(("name", "parsed"), [
    ("ukr/default", ("default", None)),
    ("ukr/my-notes.v2/ppr", ("my-notes.v2", "ppr")),
    ("ukr-default:latest", ("default", None)),
    ("ukr-default", ("default", None)),
    ("ukr-my-notes.v2:naive", ("my-notes.v2", "naive")),
    ("gpt-4o", None),
    ("ukr/", None),
])
def test_model_names_of_both_protocols_parse_one_way(
    name: str, parsed: tuple[str, str | None] | None
) -> None:
    assert parse_model(name) == parsed


def test_a_ref_names_itself_in_each_protocol() -> None:
    assert ChatModelRef("notes", "ppr", "ppr", "").openai_id == "ukr/notes/ppr"
    assert ChatModelRef("notes", None, "auto", "").ollama_name == "ukr-notes:latest"


def test_earlier_turns_become_history_without_their_footnotes() -> None:
    ref = ChatModelRef("default", "naive", "naive", "")
    inp = chat_input(ref, [
        ("system", "Be brief."), ("assistant", "Hello!"),
        ("user", "Who lays the eggs?"), ("assistant", "The queen [1].\n\nSources:\n[1] bees.md"),
        ("user", "And the drones?"), ("user", "What do workers do?"),
    ])
    assert inp.question == "What do workers do?" and inp.strategy == "naive"
    assert inp.history == [PriorTurn(question="Who lays the eggs?", answer="The queen [1]."),
                           PriorTurn(question="And the drones?", answer="")]
    with pytest.raises(UsageError, match="last message must be the user's"):
        chat_input(ref, [("user", "x"), ("assistant", "y"), ("system", "z")])


def test_footnotes_list_the_cited_sources_else_every_source() -> None:
    sources = (Source(n=1, kind="text_unit", id="a", text="t", path="a.md", start_char=0,
                      end_char=9),
               Source(n=2, kind="entity", id="e", text="t", title="Barn owl"))
    out = RAGOutput(question="q", answer="A [2].", answer_kind="generative", strategy="local",
                    index="default", sources=sources, cited=(2,))
    assert footnotes(out) == "\n\nSources:\n[2] entity: Barn owl"
    uncited = out.model_copy(update={"cited": ()})
    assert footnotes(uncited) == "\n\nSources:\n[1] a.md, chars 0-9\n[2] entity: Barn owl"
    assert strip_footnotes("A [2]." + footnotes(out)) == "A [2]."
    assert footnotes(out.model_copy(update={"sources": (), "cited": ()})) == ""
