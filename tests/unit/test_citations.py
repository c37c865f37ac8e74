"""Unit tests of `domain.answers.citations`: what an answer cites, and labels naming nothing."""

from __future__ import annotations

import pytest

from unified_kg_rag.domain.answers.citations import check_citations, mark_invalid_citations
from unified_kg_rag.domain.models import MessageRef, Source

pytestmark = pytest.mark.unit


def doc(n: int) -> Source:
    return Source(n=n, kind="text_unit", id=f"u{n}", text=f"passage {n}")


def transcript(n: int, messages: int) -> Source:
    refs = tuple(
        MessageRef(guid=f"g{n}-{i}", thread_id="t", thread_name="T", sender_name="Ann",
                   text=f"Ann: message {i}")
        for i in range(1, messages + 1)
    )  # fmt: skip
    return Source(n=n, kind="text_unit", id=f"u{n}", text="transcript", messages=refs)


THREE_DOCS = [doc(1), doc(2), doc(3)]


@pytest.mark.parametrize(
    ("answer", "cited", "invalid"),
    [
        ("A [1]. B [2][3]. C [1, 3].", (1, 2, 3), ()),
        ("Stray [42] and [0] beside [2].", (2,), ("[42]", "[0]")),
        # a message label on a plain document names no message
        ("Decimal label [3.7] on a document.", (), ("[3.7]",)),
        ("Ranges work [1-3].", (1, 2, 3), ()),
        # a range reaching past the last source cites what it covers and is reported
        ("Too far [2-7].", (2, 3), ("[2-7]",)),
        ("From zero [0-2].", (1, 2), ("[0-2]",)),
        ("Huge [1-99999999].", (1, 2, 3), ("[1-99999999]",)),
        # in order of first appearance, each once; a list item is reported alone
        ("[9] then [1, 42] then [9] and [42].", (1,), ("[9]", "[42]")),
        ("No citations at all, version 2.3 and [x].", (), ()),
    ],
)
def test_check_citations_on_documents(
    answer: str, cited: tuple[int, ...], invalid: tuple[str, ...]
) -> None:
    check = check_citations(answer, THREE_DOCS)
    assert (check.cited, check.invalid) == (cited, invalid)


@pytest.mark.parametrize(
    ("answer", "cited", "invalid"),
    [
        ("Dinner [2.3].", (2,), ()),
        ("Both [2.3, 2.4] say so.", (2,), ()),
        # source 2 holds 4 messages: there is no message 9
        ("Past the last message [2.9].", (), ("[2.9]",)),
        ("Zero message [2.0].", (), ("[2.0]",)),
        # source 1 is a plain document
        ("Mixed [1.2, 2.1] and [1].", (1, 2), ("[1.2]",)),
        ("A bracket mixing kinds [2.3, 1].", (1, 2), ()),
    ],
)
def test_check_citations_message_labels(
    answer: str, cited: tuple[int, ...], invalid: tuple[str, ...]
) -> None:
    sources = [doc(1), transcript(2, 4)]
    check = check_citations(answer, sources)
    assert (check.cited, check.invalid) == (cited, invalid)


def test_message_labels_on_a_graph_item_name_nothing() -> None:
    # an entity carries messages as provenance, but the context shows no labels for them
    entity = transcript(1, 3).model_copy(update={"kind": "entity"})
    check = check_citations("Bob said so [1.2] [1].", [entity])
    assert (check.cited, check.invalid) == ((1,), ("[1.2]",))


def test_mark_invalid_citations_marks_only_the_bogus_labels() -> None:
    answer = "Owls hunt voles [1]. Bees [42] and [1, 0]; ships [3.7] and [2-7]."
    marked = mark_invalid_citations(answer, THREE_DOCS)
    assert marked == "Owls hunt voles [1]. Bees [42?] and [1, 0?]; ships [3.7?] and [2-7?]."
    assert mark_invalid_citations("All good [1][2].", THREE_DOCS) == "All good [1][2]."


def test_brackets_inside_a_quotation_are_quoted_text_not_citations() -> None:
    # an extractive answer quotes documents verbatim: footnotes and key[0] fields included
    answer = ("1. \u201cThe core is 3,623 metres deep [5]. Oldest ice [2].\u201d [1]\n"
              "2. \u201cdecisions[0]: Move the launch.\u201d [3]")  # fmt: skip
    sources = [doc(1), doc(2), doc(3), doc(4), doc(5)]
    check = check_citations(answer, sources)
    assert check.cited == (1, 3)
    assert check.invalid == ()
    assert mark_invalid_citations(answer, [doc(1), doc(3)]) == answer
