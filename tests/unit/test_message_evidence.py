"""Unit tests of `domain.messages.evidence` (labels, cited messages) and message labels in citations."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from unified_kg_rag.domain.answers.citations import check_citations
from unified_kg_rag.domain.messages.evidence import (
    MESSAGE_CITATION_INSTRUCTIONS,
    evidence_from_answer,
    labelled_text,
    message_labels,
)
from unified_kg_rag.domain.messages.manifest import message_ref, parse_spans_record, spans_record
from unified_kg_rag.domain.messages.transcripts import SourceMessage, Tapback, render_transcripts
from unified_kg_rag.domain.models import MessageRef, Source

pytestmark = pytest.mark.unit


def msg(guid: str, minute: int, text: str, sender: str = "Bob", **extra: object) -> SourceMessage:
    return SourceMessage(
        guid=guid, thread_id="family", thread_name="Family", sender_name=sender,
        timestamp=datetime(2024, 5, 1, 9, minute, tzinfo=UTC), text=text, **extra,  # type: ignore[arg-type]
    )


def source(n: int, messages: list[SourceMessage], *, kind: str = "text_unit") -> Source:
    """A passage holding a whole rendered transcript, its messages as an index reports them."""
    (doc,) = render_transcripts(messages)
    stored = parse_spans_record(spans_record(doc))
    refs = tuple(message_ref(stored, s, doc.text[s.start : s.end]) for s in stored.messages)
    return Source(n=n, kind=kind, id=f"unit-{n}", text=doc.text, messages=refs)


@pytest.fixture
def dinner() -> Source:
    return source(1, [
        msg("d1", 0, "Ann is bringing the lasagna to dinner", sender="Ann"),
        msg("d2", 1, "Great, I will pick up wine and bread"),
        msg("d3", 2, "Dinner starts at seven\nDoor code is 4411", sender="Ann",
            tapbacks=(Tapback(kind="liked", sender_name="Bob"),)),
    ])


@pytest.fixture
def trip() -> Source:
    return source(2, [
        msg("t1", 10, "The cabin trip is in June"),
        msg("t2", 11, "I booked the cabin near the lake", sender="Ann"),
        msg("t3", 12, "Bring hiking boots"),
        msg("t4", 13, "and the cabin keys for the lake cabin", sender="Cy"),
        msg("t5", 14, "The lake cabin has a canoe", sender="Dee"),
    ])


def guids(refs: tuple[MessageRef, ...]) -> list[str]:
    return [r.guid for r in refs]


# ----------------------------------------------------------------------------- labelled text


def test_labelled_text_prefixes_every_message_block(dinner: Source) -> None:
    assert message_labels(dinner) == ["1.1", "1.2", "1.3"]
    assert labelled_text(dinner) == (
        "Thread: Family\n"
        "[1.1] [2024-05-01 09:00] Ann: Ann is bringing the lasagna to dinner\n"
        "[1.2] [2024-05-01 09:01] Bob: Great, I will pick up wine and bread\n"
        "[1.3] [2024-05-01 09:02] Ann: Dinner starts at seven\n"
        "    Door code is 4411\n"
        "    (reactions: liked by Bob)\n"
    )


def test_labelled_text_tells_apart_messages_with_identical_lines() -> None:
    """Two "ok"s from one sender in one minute are two messages, each with its own label."""
    passage = source(3, [msg("a", 5, "ok"), msg("b", 5, "ok"), msg("c", 6, "see you")])

    assert labelled_text(passage) == (
        "Thread: Family\n"
        "[3.1] [2024-05-01 09:05] Bob: ok\n"
        "[3.2] [2024-05-01 09:05] Bob: ok\n"
        "[3.3] [2024-05-01 09:06] Bob: see you\n"
    )


def test_labelled_text_labels_only_line_starts() -> None:
    """A message quoting another's line does not take that message's label."""
    passage = source(1, [
        msg("quote", 1, "you said:\n[2024-05-01 09:02] Bob: ok", sender="Ann"),
        msg("ok", 2, "ok"),
    ])

    labelled = labelled_text(passage)

    assert labelled.endswith("\n[1.2] [2024-05-01 09:02] Bob: ok\n")
    assert labelled.count("[1.2]") == 1
    assert "    [2024-05-01 09:02] Bob: ok\n" in labelled


def test_labelled_text_leaves_other_sources_alone(dinner: Source) -> None:
    plain = Source(n=4, kind="text_unit", id="u4", text="Just a document.")
    entity = dinner.model_copy(update={"kind": "entity"})

    assert labelled_text(plain) == "Just a document."
    assert labelled_text(entity) == dinner.text


def test_labelled_text_skips_a_message_whose_head_the_passage_lacks(dinner: Source) -> None:
    """A unit cut from an oversized message holds its tail only; numbering stays put."""
    tail_start = dinner.text.index("    Door code")
    cut = dinner.model_copy(update={"text": dinner.text[:tail_start].replace(
        "[2024-05-01 09:02] Ann: Dinner starts at seven\n", "")})

    labelled = labelled_text(cut)

    assert "[1.1] [2024-05-01 09:00]" in labelled and "[1.2] [2024-05-01 09:01]" in labelled
    assert "[1.3]" not in labelled


# ----------------------------------------------------------------------------- evidence


def test_a_message_label_names_that_message(dinner: Source, trip: Source) -> None:
    evidence = evidence_from_answer("Dinner starts at seven [1.3].", [dinner, trip])

    assert guids(evidence) == ["d3"]
    assert evidence[0].label == "1.3"
    assert evidence[0].thread_name == "Family"
    assert evidence[0].text.startswith("[2024-05-01 09:02] Ann: Dinner starts at seven")


def test_label_lists_name_messages_of_several_sources_in_citation_order(
    dinner: Source, trip: Source
) -> None:
    evidence = evidence_from_answer(
        "The trip is in June and Ann brings lasagna [2.1, 1.1]. Bob buys wine [1.2; 2.1].",
        [dinner, trip],
    )

    assert guids(evidence) == ["t1", "d1", "d2"]
    assert [r.label for r in evidence] == ["2.1", "1.1", "1.2"]


def test_label_numbers_out_of_range_are_ignored(dinner: Source, trip: Source) -> None:
    answer = "Nothing here [1.9], [1.0], [7.1] or [3.2], but this [2.5]."

    assert guids(evidence_from_answer(answer, [dinner, trip])) == ["t5"]


def test_a_plain_citation_picks_the_messages_sharing_the_sentence_words(
    dinner: Source, trip: Source
) -> None:
    evidence = evidence_from_answer("Ann is bringing lasagna [1].", [dinner, trip])
    assert guids(evidence) == ["d1"]
    assert evidence[0].label == "1.1"

    # most shared words first, at most three, ties by transcript order
    lake = evidence_from_answer("They stay in the lake cabin [2].", [dinner, trip])
    assert guids(lake) == ["t2", "t4", "t5"]
    assert [r.label for r in lake] == ["2.2", "2.4", "2.5"]


def test_a_plain_citation_without_shared_words_names_no_message(dinner: Source) -> None:
    assert evidence_from_answer("The weather was sunny [1].", [dinner]) == ()
    assert evidence_from_answer("Ann brings lasagna [5].", [dinner]) == ()


def test_a_plain_citation_of_a_source_without_messages_names_none() -> None:
    document = Source(n=1, kind="text_unit", id="u1", text="Ann is bringing lasagna.")
    assert evidence_from_answer("Ann is bringing lasagna [1].", [document]) == ()


def test_a_citation_after_the_period_cites_the_sentence_before_it(
    dinner: Source, trip: Source
) -> None:
    assert guids(evidence_from_answer("Ann is bringing lasagna. [1]", [dinner])) == ["d1"]
    # a citation opening the next sentence still belongs to the one before it
    answer = "Ann is bringing lasagna. [1] Wine and bread get picked up. [1] The canoe waits. [2]"
    assert guids(evidence_from_answer(answer, [dinner, trip])) == ["d1", "d2", "t5"]


def test_labels_and_plain_citations_mix_without_duplicates(dinner: Source) -> None:
    evidence = evidence_from_answer(
        "Ann is bringing the lasagna [1.1]. She is bringing lasagna to dinner [1].", [dinner]
    )
    # [1] shares words with d1 (already cited by label) and d3 ("dinner")
    assert guids(evidence) == ["d1", "d3"]
    assert [r.label for r in evidence] == ["1.1", "1.3"]


def test_no_citations_no_evidence(dinner: Source) -> None:
    assert evidence_from_answer("Ann is bringing lasagna.", [dinner]) == ()
    assert evidence_from_answer("", [dinner]) == ()


def test_instructions_show_the_label_form() -> None:
    assert "[2.3]" in MESSAGE_CITATION_INSTRUCTIONS


# ----------------------------------------------------------------------------- cited numbers


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Dinner is at seven [2.3].", (2,)),
        ("Both [2.3, 4.1] say so.", (2, 4)),
        ("Mixed [1] and [3.2][3.1].", (1, 3)),
        ("Out of range [9.1] and [1.1].", (1,)),
        ("Ranges still work [1-3] alongside [4.2].", (1, 2, 3, 4)),
        ("No citations at all, version 2.3.", ()),
    ],
)
def test_cited_numbers_counts_message_labels_as_their_source(
    answer: str, expected: tuple[int, ...], dinner: Source
) -> None:
    # four transcript passages of three messages each
    sources = [dinner.model_copy(update={"n": n}) for n in range(1, 5)]
    assert check_citations(answer, sources).cited == expected


def test_bogus_labels_add_no_evidence_and_cite_nothing(dinner: Source) -> None:
    document = Source(n=2, kind="text_unit", id="doc", text="Ann is bringing lasagna.")
    answer = "Ann brings lasagna [2.1]. Dinner at seven [1.9] [42]."
    assert evidence_from_answer(answer, [dinner, document]) == ()
    check = check_citations(answer, [dinner, document])
    assert (check.cited, check.invalid) == ((), ("[2.1]", "[1.9]", "[42]"))


def test_a_bracket_mixing_labels_and_numbers_gives_evidence(dinner: Source, trip: Source) -> None:
    evidence = evidence_from_answer("The lake cabin has a canoe [1.3, 2].", [dinner, trip])
    assert guids(evidence) == ["d3", "t5", "t2", "t4"]
