"""Claim replies in near-miss shapes, statuses in other languages, types, control characters."""

from __future__ import annotations

import json
import warnings

import pytest

from unified_kg_rag.config.search import TypeShares
from unified_kg_rag.domain.extraction.claim_dates import parse_claim_date
from unified_kg_rag.domain.extraction.claims import (
    claim_type,
    normalize_status,
    parse_claims_reply,
)
from unified_kg_rag.util.errors import ModelOutputError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "reply",
    [
        {"Claims": [{"Subject": "Acme Corp", "Type": "fraud", "Status": "true"}]},
        {" claims ": [{"subject ": "Acme Corp", " TYPE": "fraud", "status": "TRUE"}]},
        {"claims": [{"subject": {"name": "Acme Corp"}, "type": "fraud", "status": "yes"}]},
        [{"entity": "Acme Corp", "claim_type": "FRAUD", "claim_status": "confirmed"}],
        {"claims": [{"subject_id": "Acme Corp", "claim_type": "Fraud", "claim_status": "TRUE"}]},
    ],
)
def test_near_miss_key_shapes_are_read(reply: object) -> None:
    parsed = parse_claims_reply(json.dumps(reply))
    assert [(c.subject, c.type, c.status) for c in parsed.claims] == [
        ("Acme Corp", "FRAUD", "TRUE")
    ]


def test_graphrag_field_names_fill_object_description_and_status() -> None:
    item = {"subject_id": "Acme", "object_id": "Bank", "claim_type": "FRAUD",
            "claim_status": "FALSE", "claim_description": "Acme defrauded the Bank."}  # fmt: skip
    (claim,) = parse_claims_reply(json.dumps({"claims": [item]})).claims
    assert (claim.object, claim.status, claim.description) == (
        "Bank", "FALSE", "Acme defrauded the Bank.")  # fmt: skip


def test_claim_objects_without_any_readable_subject_fail_the_reply() -> None:
    with pytest.raises(ModelOutputError, match="no readable subject"):
        parse_claims_reply(json.dumps({"claims": [{"who": "Acme", "type": "FRAUD"}]}))
    with pytest.raises(ModelOutputError, match="no readable subject"):
        parse_claims_reply(json.dumps([{"subject": {"id": 3}, "type": "FRAUD"}]))
    # a placeholder subject is the model saying there is none: no claims, not a failure
    assert parse_claims_reply(json.dumps({"claims": [{"subject": "N/A"}]})).claims == ()
    # ... but a placeholder beside an object whose subject cannot be read still fails
    with pytest.raises(ModelOutputError, match="no readable subject"):
        parse_claims_reply(json.dumps({"claims": [
            {"subject": "N/A", "type": "NONE"}, {"company": "Delta Inc", "type": "LAWSUIT"}]}))
    # one readable claim among unreadable ones is a reply (the others are skipped)
    mixed = [{"who": "Acme"}, {"subject": "Beta", "type": "fine"}]
    assert [c.subject for c in parse_claims_reply(json.dumps(mixed)).claims] == ["Beta"]


@pytest.mark.parametrize(
    ("word", "status"),
    [("faux", "FALSE"), ("Falsch", "FALSE"), ("falso", "FALSE"), ("假", "FALSE"),
     ("否", "FALSE"), ("不实", "FALSE"), ("誤り", "FALSE"), ("not true", "FALSE"),
     ("Untrue.", "FALSE"), (0, "FALSE"), ("0", "FALSE"), ("vrai", "TRUE"), ("wahr", "TRUE"),
     ("verdadero", "TRUE"), ("真", "TRUE"), ("事実", "TRUE"), (1, "TRUE"), ("1", "TRUE"),
     ("vermutet", "SUSPECTED"), (7, "SUSPECTED")],
)  # fmt: skip
def test_status_words_in_other_languages_and_negations(word: object, status: str) -> None:
    assert normalize_status(word) == status


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("  anti competitive-practices ", "ANTI_COMPETITIVE_PRACTICES"),
     ("Betrug/Täuschung", "BETRUG_TÄUSCHUNG"), ("fraud", "FRAUD"), ("詐欺 行為", "詐欺_行為"),
     ("--", "")],
)  # fmt: skip
def test_claim_types_are_upper_snake_case_in_any_script(raw: str, expected: str) -> None:
    assert claim_type(raw) == expected


def test_control_characters_are_stripped_from_claim_fields() -> None:
    item = {"subject": "Ac\u0000me", "type": "FR\u0000AUD", "description": "a\u0007b\u0000c",
            "source_text": "x\u001by"}  # fmt: skip
    (claim,) = parse_claims_reply(json.dumps([item])).claims
    assert (claim.subject, claim.type, claim.description, claim.source_text) == (
        "Ac me", "FR_AUD", "a b c", "x y")  # fmt: skip
    assert "\u0000" not in claim.model_dump_json()


def test_an_end_date_before_the_start_is_dropped_and_the_start_kept() -> None:
    item = {"subject": "Acme", "start_date": "2021-05-01", "end_date": "2020"}
    (claim,) = parse_claims_reply(json.dumps([item])).claims
    assert (claim.start_date, claim.end_date) == ("2021-05-01", None)
    item = {"subject": "Acme", "start_date": "2021-05", "end_date": "2021-05-31"}
    (claim,) = parse_claims_reply(json.dumps([item])).claims
    assert (claim.start_date, claim.end_date) == ("2021-05", "2021-05-31")


def test_a_time_zone_name_is_ignored_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parse_claim_date("Jan 1 2021 12:00 PST") == "2021-01-01"


def test_claims_past_the_cap_are_counted() -> None:
    many = [{"subject": f"S{i}"} for i in range(7)]
    parsed = parse_claims_reply(json.dumps({"claims": many}), max_claims=2)
    assert len(parsed.claims) == 2 and parsed.capped == 5


def test_type_shares_with_only_the_claim_share_positive_are_valid() -> None:
    only = {"text_unit": 0, "entity": 0, "relationship": 0, "report": 0}
    assert TypeShares.model_validate({**only, "claim": 1.0}).claim == 1.0
    with pytest.raises(ValueError, match="at least one share must be positive"):
        TypeShares.model_validate({**only, "claim": 0})


def test_a_think_tag_inside_a_value_does_not_cut_the_reply() -> None:
    # found by the property test: a description naming "<THINK>" read as an unfinished
    # reasoning block and cut the JSON before it
    reply = json.dumps({"claims": [{"subject": "Acme", "description": "says <THINK> a lot"}]})
    assert [c.description for c in parse_claims_reply(reply).claims] == ["says <THINK> a lot"]
    # a real reasoning block before the JSON is still dropped
    spoken = '<think>maybe {"claims": []}</think>{"claims": [{"subject": "Beta"}]}'
    assert [c.subject for c in parse_claims_reply(spoken).claims] == ["Beta"]

