"""The extractive answer reads the whole packed context (issue 16, item 4, answer side)."""

from __future__ import annotations

import asyncio

from tests.fakes import FakeEmbedder

from unified_kg_rag.domain.models import Source
from unified_kg_rag.retrieval.extractive import extractive_answer

FILLER = [
    "Owls are nocturnal birds of prey that hunt small mammals at night.",
    "Honey bees live in colonies and the queen lays the eggs of the hive.",
    "The clipper ship was a fast sailing vessel of the nineteenth century.",
    "Sourdough bread rises because wild yeast ferments the flour overnight.",
    "The Leiden algorithm refines partitions of large networks into communities.",
    "Glaciers carve deep valleys as they move slowly down the mountains.",
    "Copper wire carries electric current with very little resistance.",
    "A sonnet is a poem of fourteen lines with a fixed rhyme scheme.",
    "Tidal pools hold starfish, anemones and small crabs at low tide.",
    "The printing press spread books across Europe in the fifteenth century.",
]


def test_a_sentence_in_the_last_source_of_the_context_is_quoted() -> None:
    sources = [
        Source(n=i, kind="text_unit", id=f"u{i}", text=text)
        for i, text in enumerate(FILLER, start=1)
    ]
    answer_text = "Project Bluefin is the codename of the harbour radar upgrade."
    sources.append(Source(n=len(sources) + 1, kind="text_unit", id="late", text=answer_text))
    embedder = FakeEmbedder()
    question = "What is the codename Bluefin?"

    async def main() -> str:
        vector = await embedder.embed_query(question)
        answer = await extractive_answer(question, embedder, vector, sources, sentences=4)
        return answer.text

    text = asyncio.run(main())
    assert f"\u201c{answer_text}\u201d [{len(sources)}]" in text.splitlines()[2]
