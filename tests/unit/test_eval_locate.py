"""Locating restated evidence sentences in a document by content-word coverage."""

from __future__ import annotations

from unified_kg_rag.evaluation.datasets.locate import EvidenceLocator

DOC = (
    "Marley was dead, to begin with. There is no doubt whatever about that. "
    "Scrooge signed the register of his burial. Old Marley was as dead as a door-nail. "
    "The clerk in the tank kept a very small fire. It looked like one coal."
)


def test_a_restatement_is_located_and_the_document_text_returned() -> None:
    found = EvidenceLocator(DOC).locate("The burial register was signed by Scrooge.")
    # content words burial, register, signed, scrooge: all in one sentence, which wins the
    # tie with the pairs holding it
    assert found is not None and found.coverage == 1.0
    assert found.text == "Scrooge signed the register of his burial."


def test_the_next_sentence_joins_when_it_holds_the_rest() -> None:
    found = EvidenceLocator(DOC).locate("The burial register of Marley was signed by Scrooge.")
    # marley is in the next sentence: 4 of 5 alone, 5 of 5 with it
    assert found is not None and found.coverage == 1.0
    assert found.text == ("Scrooge signed the register of his burial. "
                          "Old Marley was as dead as a door-nail.")  # fmt: skip


def test_two_adjacent_sentences_can_hold_it_together() -> None:
    found = EvidenceLocator(DOC).locate("The clerk's small fire looked like one coal in the tank.")
    # 7 of 8 content words ("clerk's" keeps its apostrophe, so it is not "clerk")
    assert found is not None and found.coverage == 0.875
    assert found.text == ("The clerk in the tank kept a very small fire. "
                          "It looked like one coal.")  # fmt: skip


def test_too_few_content_words_or_too_little_coverage_is_not_located() -> None:
    locator = EvidenceLocator(DOC)
    assert locator.locate("He was dead.") is None  # one content word
    assert locator.locate("Scrooge owned a warehouse in London near Cornhill.") is None
    assert locator.locate("Scrooge signed papers and ledgers.", min_coverage=0.75) is None
    assert locator.locate("Scrooge signed papers and ledgers.", min_coverage=0.5) is not None
