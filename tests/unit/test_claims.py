"""Claims (covariates) in the domain: dates, statuses, reply reading, resolution, report table."""

from __future__ import annotations

import json

import pytest

from unified_kg_rag.domain.extraction.claim_dates import parse_claim_date
from unified_kg_rag.domain.extraction.claims import (
    ClaimRecord,
    ExtractedClaim,
    normalize_status,
    parse_claims_reply,
    render_claim_messages,
)
from unified_kg_rag.domain.extraction.records import ExtractedEntity, ExtractionRecord
from unified_kg_rag.domain.graph.claims import (
    Claim,
    claim_from_record,
    claim_record,
    claim_text,
    resolve_claims,
)
from unified_kg_rag.domain.graph.report_context import CLAIM_HEADER, build_report_context
from unified_kg_rag.domain.identity import entity_id, entity_key
from unified_kg_rag.domain.models import Community, Entity
from unified_kg_rag.domain.prompts import load_prompt
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.ingestion.graph.delta import context_fingerprints
from unified_kg_rag.util.errors import ModelOutputError

pytestmark = pytest.mark.unit

COUNT = EstimateTokenCounter().count


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-03-15", "2024-03-15"),
        ("2024-03-15T10:30:00Z", "2024-03-15"),
        ("March 15, 2024", "2024-03-15"),
        ("15 March 2024", "2024-03-15"),
        ("March 2024", "2024-03"),
        ("2024-3", "2024-03"),
        ("1843", "1843"),
        ("2024年3月15日", "2024-03-15"),
        ("2024년 3월", "2024-03"),
        ("2024年第2四半期", "2024-04"),
        ("early 1990s", None),
        ("2023-13-45", None),
        ("2023-02-30", None),
        ("unknown", None),
        ("N/A", None),
        ("不明", None),
        ("미상", None),
        ("", None),
        ("March 15", None),  # no year: not a date a claim can be placed by
        ("sometime after the war", None),
        (None, None),
        (2024, "2024"),  # a JSON number is a year
        ("45", None),  # a two-digit year: the century would be a guess
        ("3/4/99", None),
        ("01.05.2020", "2020-05-01"),  # dotted numeric dates are day first
        ("Q3 2021", "2021-07"),
        ("2021-q3", "2021-07"),
        ("Jan 1 2021 12:00 PST", "2021-01-01"),
    ],
)
def test_claim_dates_read_leniently_to_iso_or_none(value: object, expected: str | None) -> None:
    assert parse_claim_date(value) == expected


@pytest.mark.parametrize(
    ("word", "status"),
    [("TRUE", "TRUE"), ("true", "TRUE"), ("Confirmed.", "TRUE"), (True, "TRUE"),
     ("FALSE", "FALSE"), ("denied", "FALSE"), (False, "FALSE"),
     ("SUSPECTED", "SUSPECTED"), ("alleged", "SUSPECTED"), ("probably", "SUSPECTED"),
     ("", "SUSPECTED"), (None, "SUSPECTED")],
)  # fmt: skip
def test_status_is_normalised_and_an_unknown_word_reads_suspected(
    word: object, status: str
) -> None:
    assert normalize_status(word) == status


CLAIM = {"subject": "Acme", "object": "Bank", "type": "fraud", "status": "alleged",
         "start_date": "2021-03", "end_date": "", "description": "Acme defrauded the Bank.",
         "source_text": "Acme defrauded"}  # fmt: skip


def test_reply_in_fences_with_prose_is_read_and_fields_normalised() -> None:
    reply = "Here are the claims:\n```json\n" + json.dumps({"claims": [CLAIM]}) + "\n```"
    parsed = parse_claims_reply(reply)
    assert not parsed.truncated
    assert parsed.claims == (ExtractedClaim(
        subject="Acme", object="Bank", type="FRAUD", status="SUSPECTED", start_date="2021-03",
        end_date=None, description="Acme defrauded the Bank.", source_text="Acme defrauded",
    ),)  # fmt: skip


def test_bare_list_placeholders_and_subjectless_claims() -> None:
    items = [{**CLAIM, "object": "N/A"}, {**CLAIM, "subject": "..."}, {"description": "x"}]
    parsed = parse_claims_reply(json.dumps(items))
    assert [(c.subject, c.object) for c in parsed.claims] == [("Acme", "")]
    assert not parsed.truncated


def test_a_cut_reply_keeps_its_complete_claims() -> None:
    whole = json.dumps({"claims": [CLAIM, {**CLAIM, "subject": "Other"}]})
    cut = whole[: whole.index("Other") + 3]
    parsed = parse_claims_reply(cut, finish_reason="length")
    assert [c.subject for c in parsed.claims] == ["Acme"] and parsed.truncated
    # a reply whose outer object is broken but whose claims decode counts as cut too
    assert parse_claims_reply(cut.replace("Oth", "Acme2"), finish_reason="stop").truncated


def test_a_lone_claim_object_is_a_whole_reply() -> None:
    parsed = parse_claims_reply(json.dumps(CLAIM))
    assert [c.subject for c in parsed.claims] == ["Acme"] and not parsed.truncated


def test_nothing_to_claim_and_unreadable_replies() -> None:
    assert parse_claims_reply('{"claims": []}').claims == ()
    assert parse_claims_reply('{"claims": null}').claims == ()
    assert parse_claims_reply("None").claims == ()
    assert parse_claims_reply("<think>hmm</think>[]").claims == ()
    with pytest.raises(ModelOutputError, match="empty"):
        parse_claims_reply("  ")
    with pytest.raises(ModelOutputError, match="no claim object"):
        parse_claims_reply("I cannot find claims in this text, sorry.")


def test_max_claims_keeps_the_first() -> None:
    many = [{**CLAIM, "subject": f"S{i}"} for i in range(5)]
    parsed = parse_claims_reply(json.dumps({"claims": many}), max_claims=2)
    assert [c.subject for c in parsed.claims] == ["S0", "S1"]


def test_claim_prompt_lists_the_units_entities_and_keeps_braces_of_the_text() -> None:
    messages = render_claim_messages(
        "Acme {sic} defrauded the Bank.", ["Acme", "Bank"], template=load_prompt(
            "extract_claims.v1"), claim_description="Fraud.", claim_types=["FRAUD"],
    )  # fmt: skip
    assert [m.role for m in messages] == ["system", "user"]
    assert "Acme {sic} defrauded the Bank." in messages[1].content
    assert "- Acme\n- Bank" in messages[1].content
    assert "Claim types: FRAUD" in messages[0].content
    assert '{"claims": []}' in messages[0].content  # the template's own braces stay


def _extraction(*names: str) -> ExtractionRecord:
    return ExtractionRecord(fingerprint="", entities=tuple(ExtractedEntity(name=n) for n in names))


def _stated(subject: str, obj: str = "", description: str = "d") -> ExtractedClaim:
    return ExtractedClaim(subject=subject, object=obj, type="FRAUD", status="TRUE",
                          start_date="2020", description=description)  # fmt: skip


def test_resolution_drops_foreign_subjects_keeps_literal_objects_and_merges_by_id() -> None:
    keys = {entity_key(n): entity_id(n) for n in ("Acme", "Bank", "Carol")}
    names = {entity_id(n): n for n in ("Acme", "Bank", "Carol")}
    units = [
        ("u2", _extraction("Acme Corp.", "Bank"),
         ClaimRecord(fingerprint="b", claims=(_stated("ACME", "Bank"), _stated("Carol"),
                                              _stated("Dave")))),
        ("u1", _extraction("Acme", "Carol"),
         ClaimRecord(fingerprint="a", claims=(_stated("acme", "bank"),))),
    ]  # fmt: skip
    keys[entity_key("Acme Corp.")] = entity_id("Acme")  # a merge: the same entity
    result = resolve_claims(units, keys, names)
    # Carol is an entity of the graph but not of u2, Dave of none: both dropped; "ACME" is
    # the key of the entity u2's "Acme Corp." merged into: kept
    assert result.dropped_subject == 2
    by_unit = {c.text_unit_ids: c for c in result.claims}
    # u2's object is its own entity Bank; u1 did not list Bank: kept as the literal name
    bank = by_unit[("u2",)]
    assert (bank.subject_id, bank.subject) == (entity_id("Acme"), "Acme")
    assert (bank.object_id, bank.object) == (entity_id("Bank"), "Bank")
    literal = by_unit[("u1",)]
    assert (literal.object_id, literal.object) == ("", "bank")
    # the same statement in two units merges into one claim citing both
    twice = [("u1", _extraction("Acme"), ClaimRecord(fingerprint="a", claims=(_stated("Acme"),))),
             ("u3", _extraction("Acme"), ClaimRecord(fingerprint="c", claims=(_stated("acme"),)))]
    merged = resolve_claims(twice, keys, names).claims
    assert len(merged) == 1 and merged[0].text_unit_ids == ("u1", "u3")


def test_claim_record_round_trips_and_reads_as_text() -> None:
    claim = Claim(id="c1", subject_id="e1", subject="Acme", object="Bank", type="FRAUD",
                  status="SUSPECTED", start_date="2021-03", end_date="2021-06",
                  description="Acme defrauded the Bank.", text_unit_ids=("u1", "u2"))
    record = claim_record(claim)
    assert record.text == "Acme — FRAUD — Bank [SUSPECTED, 2021-03 to 2021-06]: " \
        "Acme defrauded the Bank."
    assert record.fields["subject_id"] == "e1" and record.fields["object_id"] == ""
    assert claim_from_record(record) == claim
    assert claim_text(claim.model_copy(update={"object": "", "type": "", "start_date": None,
                                               "end_date": None})) == (
        "Acme [SUSPECTED]: Acme defrauded the Bank."
    )  # fmt: skip
    assert claim_from_record(record.model_copy(update={"fields": {}})) is None


def _entity(eid: str, rank: int) -> Entity:
    return Entity(id=eid, name=f"Name {eid}", type="THING", description=f"About {eid}.",
                  rank=rank, text_unit_ids=(f"tu-{eid}",))  # fmt: skip


ENTITIES = {e: _entity(e, r) for e, r in (("a", 3), ("b", 2), ("z", 1))}
COMMUNITY = Community(id="c", level=0, member_ids=("a", "b"))


def _claim(cid: str, subject: str, description: str = "A claim.") -> Claim:
    return Claim(id=cid, subject_id=subject, subject=f"Name {subject}", type="FRAUD",
                 status="TRUE", start_date="2020", description=description)  # fmt: skip


def test_report_context_claims_table_only_with_claims_and_within_the_budget() -> None:
    plain = build_report_context(COMMUNITY, ENTITIES, [], max_tokens=10_000, count=COUNT)
    none = build_report_context(COMMUNITY, ENTITIES, [], max_tokens=10_000, count=COUNT,
                                claims={"z": [_claim("cz", "z")]})  # fmt: skip
    assert none.text == plain.text and none.claim_ids == ()  # z is not a member
    claims = {"a": [_claim("ca", "a")], "b": [_claim("cb", "b", "Long. " * 200)]}
    ctx = build_report_context(COMMUNITY, ENTITIES, [], max_tokens=10_000, count=COUNT,
                               claims=claims)  # fmt: skip
    assert ctx.text.startswith(plain.text)
    assert ctx.text[len(plain.text):].splitlines()[2:5] == [
        *CLAIM_HEADER.splitlines(), "1,Name a,,FRAUD,TRUE,2020,A claim."]
    assert ctx.claim_ids == ("ca", "cb") and not ctx.truncated
    budget = COUNT(plain.text) + COUNT(CLAIM_HEADER) + 40
    tight = build_report_context(COMMUNITY, ENTITIES, [], max_tokens=budget, count=COUNT,
                                 claims=claims)  # fmt: skip
    assert tight.claim_ids == ("ca",) and tight.truncated  # the long claim does not fit
    assert COUNT(tight.text) <= budget


def test_context_fingerprints_change_only_with_the_members_claims() -> None:
    base = context_fingerprints([COMMUNITY], ENTITIES, [])
    assert context_fingerprints([COMMUNITY], ENTITIES, [], {}) == base
    assert context_fingerprints([COMMUNITY], ENTITIES, [], {"z": [_claim("cz", "z")]}) == base
    assert context_fingerprints([COMMUNITY], ENTITIES, [], {"a": [_claim("ca", "a")]}) != base


def test_report_claims_table_is_in_entity_then_status_date_order() -> None:
    def made(cid: str, subject: str, status: str, start: str | None) -> Claim:
        return _claim(cid, subject).model_copy(update={"status": status, "start_date": start})

    # ids sort the other way round: the table must not follow them
    claims = {"b": [made("c1", "b", "TRUE", None)],
              "a": [made("c2", "a", "FALSE", "2001"), made("c3", "a", "TRUE", None),
                    made("c4", "a", "SUSPECTED", "1999"), made("c5", "a", "TRUE", "2010")]}
    ctx = build_report_context(COMMUNITY, ENTITIES, [], max_tokens=10_000, count=COUNT,
                               claims=claims)  # fmt: skip
    # entity a (rank 3) before b; a's claims: TRUE dated, TRUE undated, SUSPECTED, FALSE
    assert ctx.claim_ids == ("c5", "c3", "c4", "c2", "c1")
