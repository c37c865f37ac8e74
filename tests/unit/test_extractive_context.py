"""The extractive answer reads the whole packed context (issue 16, item 4, answer side)."""

from __future__ import annotations

import asyncio
import re

from tests.fakes import FakeEmbedder

from unified_kg_rag.domain.messages.ref import MessageRef
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


def _ask(question: str, sources: list[Source], **kwargs: float) -> tuple[str, FakeEmbedder]:
    embedder = FakeEmbedder()

    async def main() -> str:
        vector = await embedder.embed_query(question)
        answer = await extractive_answer(question, embedder, vector, sources, **kwargs)  # type: ignore[arg-type]
        return answer.text

    return asyncio.run(main()), embedder


def test_every_source_gets_its_closest_sentence_before_any_source_gets_a_second() -> None:
    # a multi-hop question: the answer sentence ("6.8 inches") shares only "snowfall" with
    # it and is not among the four sentences closest overall, which all sit in source 1
    band = (
        "Brother is a band whose performers were formed in the city of Seattle. "
        "The performers of Brother toured the city every year. "
        "The band Brother was formed by performers from the city. "
        "Brother performers formed a record label in the city."
    )
    city = (
        "Seattle is a seaport city on the West Coast. "
        "Average annual snowfall at the airport is 6.8 inches."
    )
    sources = [Source(n=1, kind="text_unit", id="band", text=band),
               Source(n=2, kind="text_unit", id="city", text=city)]  # fmt: skip
    question = "What is the average snowfall in the city where the performers of Brother were formed?"
    text, _ = _ask(question, sources, sentences=4, per_source=2, min_relative=0.0)
    lines = text.splitlines()[2:]
    assert len(lines) == 2  # one line per source, quotes in reading order, then the citation
    by_source = {line.rsplit(" ", 1)[1]: line for line in lines}
    assert by_source["[2]"].endswith(
        "\u201cAverage annual snowfall at the airport is 6.8 inches.\u201d [2]")
    assert by_source["[1]"].count("\u201c") == 2  # the band source's second sentence fills


def test_a_source_gives_no_more_than_per_source_sentences_and_the_total_is_capped() -> None:
    sources = [
        Source(n=i, kind="text_unit", id=f"u{i}",
               text=" ".join(f"Bluefin radar fact number {j} of unit {i}." for j in range(6)))
        for i in range(1, 5)
    ]  # fmt: skip
    text, _ = _ask("Bluefin radar fact?", sources, sentences=6, per_source=2, min_relative=0.0)
    lines = text.splitlines()[2:]
    assert sum(line.count("\u201c") for line in lines) == 6
    assert all(line.count("\u201c") <= 2 for line in lines)
    assert {line.rsplit("[", 1)[1] for line in lines} == {"1]", "2]", "3]", "4]"}


def test_a_second_sentence_far_below_the_best_is_not_quoted() -> None:
    source = Source(n=1, kind="text_unit", id="u",
                    text="Project Bluefin is the harbour radar upgrade. Owls hunt at night.")  # fmt: skip
    text, _ = _ask("What is Project Bluefin?", [source], sentences=4, per_source=2,
                   min_relative=0.6)  # fmt: skip
    assert text.splitlines()[2:] == ["1. \u201cProject Bluefin is the harbour radar upgrade.\u201d [1]"]


def test_a_long_source_embeds_only_its_sentences_holding_most_question_terms() -> None:
    filler = " ".join(f"Filler sentence number {j} says nothing at all." for j in range(40))
    source = Source(n=1, kind="text_unit", id="u",
                    text=filler + " Project Bluefin is the harbour radar upgrade.")  # fmt: skip
    text, embedder = _ask("What is Project Bluefin?", [source], sentences=2, per_source=2)
    assert "Project Bluefin is the harbour radar upgrade." in text.splitlines()[2]
    assert embedder.embedded_texts == 1 + 12  # the question, then 12 of 41 sentences


def test_a_record_follows_a_sentence_of_its_source_and_leads_a_source_without_one() -> None:
    prose = Source(n=1, kind="text_unit", id="p",
                   text="Northwind opened its first shop in Bergen in 1987. "
                        "Northwind sold dried fish.\n\nname: Northwind  shop: Bergen  opened: 1987\n")  # fmt: skip
    table = Source(n=2, kind="text_unit", id="t",
                   text="name: Northwind Traders  shop: Bergen harbour  opened: 1987\n\n"
                        "name: Contoso  shop: Oslo  opened: 1990\n")  # fmt: skip
    question = "When did Northwind open its shop in Bergen?"
    one, _ = _ask(question, [prose, table], sentences=6, per_source=1, min_relative=0.0)
    lines = one.splitlines()[2:]
    prose_line = next(line for line in lines if line.endswith("[1]"))
    assert prose_line.endswith("\u201cNorthwind opened its first shop in Bergen in 1987.\u201d [1]")
    table_line = next(line for line in lines if line.endswith("[2]"))
    assert "name: Northwind Traders" in table_line  # a source of records: its best row
    two, _ = _ask(question, [prose, table], sentences=6, per_source=2, min_relative=0.0)
    prose_line = next(line for line in two.splitlines()[2:] if line.endswith("[1]"))
    assert "name: Northwind shop: Bergen opened: 1987" in prose_line  # the row, second


def _transcript(n: int, texts: list[str]) -> Source:
    refs = tuple(
        MessageRef(guid=f"g{n}-{i}", thread_id="t", thread_name="T", sender_name="Ann",
                   text=text, label=f"{n}.{i}")
        for i, text in enumerate(texts, start=1)
    )  # fmt: skip
    return Source(n=n, kind="text_unit", id=f"t{n}", text="\n".join(texts), messages=refs)


def test_messages_are_the_closest_few_over_every_transcript_not_one_per_day() -> None:
    days = [
        _transcript(1, ["Bob is making lasagna for dinner tonight.", "Sam brings the salad."]),
        _transcript(2, ["Leftover lasagna from Bob is in the fridge.", "The car is at the garage."]),
        _transcript(3, ["The weather was grey all weekend long.", "Tickets are in row F."]),
    ]
    text, _ = _ask("Who is making lasagna?", days, sentences=16, per_source=2, messages=2,
                   min_relative=0.0)
    lines = text.splitlines()[2:]
    quoted = [label for line in lines for label in re.findall(r"\[(\d+\.\d+)\]", line)]
    assert sorted(quoted) == ["1.1", "2.1"]  # two messages in all, the third day none


def test_messages_all_scoring_below_zero_still_give_the_closest_one() -> None:
    day = _transcript(1, ["Quarterly invoices were posted on Monday.", "Invoices are paid."])
    embedder = FakeEmbedder()

    async def main() -> str:
        vector = -(await embedder.embed_query("quarterly invoices posted"))  # every cosine < 0
        answer = await extractive_answer("zzz", embedder, vector, [day], sentences=4,
                                         min_similarity=0.3)
        return answer.text

    lines = asyncio.run(main()).splitlines()
    assert lines[2] == "No passage answers this well; the closest are:"
    assert len(re.findall(r"\[1\.\d\]", lines[3])) == 1


def test_short_sentences_and_cjk_sentences_are_quotable() -> None:
    sources = [Source(n=1, kind="text_unit", id="s", text="Meeting notes.\n\nHe was 42.\n"),
               Source(n=2, kind="text_unit", id="c", text="东京是日本的首都。京都很古老。")]  # fmt: skip
    text, _ = _ask("How old was he? 42", sources, sentences=4, per_source=2, min_relative=0.0)
    assert "\u201cHe was 42.\u201d" in text
    assert "\u201c东京是日本的首都。\u201d" in text


def test_a_message_repeating_the_question_does_not_push_out_its_reply() -> None:
    day = _transcript(1, ["Hey, what time is dinner on Friday?",
                          "Dinner is at 7pm at Luigi's on Friday, see you there."])  # fmt: skip
    text, _ = _ask("What time is dinner on Friday?", [day], sentences=16, messages=4,
                   min_relative=0.6)  # fmt: skip
    assert "[1.1]" in text and "[1.2]" in text


def test_an_overlong_sentence_is_quoted_around_the_question_terms() -> None:
    clauses = " ".join(f"The delegates debated clause number {i} at length," for i in range(150))
    sentence = clauses + " and the treaty was finally signed in Geneva on 12 March 1999."
    source = Source(n=1, kind="text_unit", id="t", text=sentence)
    text, _ = _ask("Where was the treaty signed?", [source], sentences=2)
    quote = text.splitlines()[2]
    assert "signed in Geneva on 12 March 1999." in quote
    assert quote.startswith("1. \u201c\u2026 ") and len(quote) < 700


def test_a_source_far_below_the_best_is_not_quoted() -> None:
    sources = [Source(n=1, kind="text_unit", id="a",
                      text="The Vostok ice core was drilled 3,623 metres deep."),
               Source(n=2, kind="text_unit", id="b", text="Serve the lemonade chilled.")]  # fmt: skip
    text, _ = _ask("How deep was the Vostok ice core drilled?", sources, sentences=16,
                   source_floor=0.2)  # fmt: skip
    assert text.splitlines()[2:] == ["1. \u201cThe Vostok ice core was drilled 3,623 metres deep.\u201d [1]"]
