"""Sentence segmentation for extractive answers (`domain.text.sentences`) and the shapes of
text that are not sentences (`domain.text.shapes`): issue 16, items 1 and 2."""

from __future__ import annotations

import pytest

from unified_kg_rag.domain.text.sentences import Segment, sentence_segments
from unified_kg_rag.domain.text.shapes import shape_of


def texts(text: str) -> list[str]:
    return [text[s.start : s.end] for s in sentence_segments(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Acme Ltd. was founded in 1990 by Jane Doe in Leeds. It makes widgets.",
         ["Acme Ltd. was founded in 1990 by Jane Doe in Leeds.", "It makes widgets."]),
        ("Dr. Smith joined Acme Inc. in 1995 as head of research. He left in 2001.",
         ["Dr. Smith joined Acme Inc. in 1995 as head of research.", "He left in 2001."]),
        ("He works at Acme Inc. The firm makes widgets.",
         ["He works at Acme Inc.", "The firm makes widgets."]),
        ("J. R. R. Tolkien wrote The Hobbit. It sold well.",
         ["J. R. R. Tolkien wrote The Hobbit.", "It sold well."]),
        ("The price rose 3.5 per cent to $4.20 in the U.S. last year. Analysts were surprised.",
         ["The price rose 3.5 per cent to $4.20 in the U.S. last year.",
          "Analysts were surprised."]),
        ('"Is it over?" she asked. "Yes," he said.', ['"Is it over?" she asked.',
                                                      '"Yes," he said.']),
        ("The meeting is at 10 a.m. on Monday. Bring notes.",
         ["The meeting is at 10 a.m. on Monday.", "Bring notes."]),
        ("Smith et al. reported this in 2004. The result held.",
         ["Smith et al. reported this in 2004.", "The result held."]),
        ("He was born Jan. 5, 1950 in Paris. He died in 2010.",
         ["He was born Jan. 5, 1950 in Paris.", "He died in 2010."]),
        ("東京は日本の首都です。人口は多い。", ["東京は日本の首都です。", "人口は多い。"]),
        ("He was met at the\nstation by his aunt. She drove.",
         ["He was met at the\nstation by his aunt.", "She drove."]),
    ],
)  # fmt: skip
def test_abbreviations_initials_decimals_and_quotes_do_not_cut_a_sentence(
    text: str, expected: list[str]
) -> None:
    assert texts(text) == expected


def test_segments_cover_the_text_in_order_with_offsets() -> None:
    text = "  First one here.  Second one here.\n\n\nThird one here. "
    segments = sentence_segments(text)
    assert [(s.start, s.end) for s in segments] == [(2, 17), (19, 35), (38, 53)]
    assert all(isinstance(s, Segment) for s in segments)
    assert sentence_segments("") == [] and sentence_segments(" \n\t ") == []


def test_a_heading_line_is_its_own_segment_never_merged_into_the_first_sentence() -> None:
    text = "ANNUAL REPORT 2023\nAcme Ltd. was founded in 1990. It grew.\n\nTitle Line\nNext one."
    assert texts(text) == ["ANNUAL REPORT 2023", "Acme Ltd. was founded in 1990.", "It grew.",
                           "Title Line", "Next one."]  # fmt: skip
    kinds = [s.shape for s in sentence_segments(text)]
    assert kinds == ["heading", "sentence", "sentence", "heading", "sentence"]


@pytest.mark.parametrize(
    ("line", "shape"),
    [
        ("# Annual Report", "heading"),
        ("## 2. Results", "heading"),
        ("NORTHWIND TRADERS ANNUAL REPORT 2023", "heading"),
        ("Northwind Traders Shop History", "heading"),
        ("The History of the Decline and Fall of the Roman Empire", "heading"),
        ("Chapter 12", "heading"),
        ("Copyright © 2024 Acme Ltd. All rights reserved.", "boilerplate"),
        ("© 2023 Northwind Traders", "boilerplate"),
        ("All rights reserved.", "boilerplate"),
        ("Page 3 of 12", "boilerplate"),
        ("- 14 -", "boilerplate"),
        ("Home | About us | Contact", "boilerplate"),
        ("Skip to main content", "boilerplate"),
        ("name: Northwind Traders  company: Northwind  opened: 1987", "record"),
        ("founded: 1990", "record"),
        ("| Bergen | 12 | 1987 |", "record"),
        ("id,name,city,shops 1,Northwind,Bergen,12 2,Contoso,Oslo,4", "record"),
        ("Bergen\t12\t1987", "record"),
        ("Northwind Traders opened its first shop in Bergen in 1987.", "sentence"),
        ("The company makes widgets", "sentence"),
        ("Note: the shop opened in Bergen in 1987 and grew fast.", "sentence"),
        ("He said that all rights were reserved for the family.", "sentence"),
        ("The barn owl hunts voles, mice, shrews, frogs and insects at night.", "sentence"),
        ("What did the queen lay?", "sentence"),
    ],
)  # fmt: skip
def test_shape_rules(line: str, shape: str) -> None:
    assert shape_of(line) == shape
