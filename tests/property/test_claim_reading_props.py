"""Properties of reading claim replies and dates: never an unexpected error, always the format.

Any text is either a date in ISO-8601 with the precision it states or None, and never raises;
any reply is read into claims with a known status and ISO dates, or refused with
`ModelOutputError`, and a well-formed reply round-trips.
"""

from __future__ import annotations

import json
import re
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_kg_rag.domain.extraction.claim_dates import parse_claim_date
from unified_kg_rag.domain.extraction.claims import CLAIM_STATUSES, parse_claims_reply
from unified_kg_rag.util.errors import ModelOutputError

pytestmark = pytest.mark.unit

ISO = r"^\d{4}(-\d{2}(-\d{2})?)?$"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_text_is_an_iso_date_or_none(text: str) -> None:
    value = parse_claim_date(text)
    assert value is None or re.match(ISO, value)


@settings(max_examples=200, deadline=None)
@given(st.dates(min_value=date(1000, 1, 1)))
def test_a_written_date_reads_back(day: date) -> None:
    assert parse_claim_date(day.isoformat()) == day.isoformat()
    assert parse_claim_date(day.strftime("%B %d, %Y")) == day.isoformat()
    assert parse_claim_date(day.strftime("%B %Y")) == day.isoformat()[:7]


claim = st.fixed_dictionaries({
    # a subject that is never a placeholder ("None", "N/A"); usable when it has a letter
    "subject": st.text(max_size=12).map(lambda t: "S" + t), "object": st.text(max_size=12),
    "type": st.text(max_size=10), "status": st.text(max_size=10),
    "start_date": st.text(max_size=12), "end_date": st.text(max_size=12),
    "description": st.text(max_size=30),
})  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(claim, max_size=4), st.integers(min_value=0, max_value=400))
def test_any_reply_or_its_cut_reads_or_is_refused(claims: list[dict[str, str]], cut: int) -> None:
    whole = json.dumps({"claims": claims}, ensure_ascii=False)
    for reply, finish in ((whole, "stop"), (whole[:cut], "length")):
        try:
            parsed = parse_claims_reply(reply, finish_reason=finish)
        except ModelOutputError:
            assert not reply.strip() or (finish == "stop" and reply != whole)
            continue
        assert all(c.status in CLAIM_STATUSES for c in parsed.claims)
        for c in parsed.claims:
            for value in (c.start_date, c.end_date):
                assert value is None or re.match(ISO, value)
        if reply == whole and finish == "stop":
            assert len(parsed.claims) == len(claims) and not parsed.truncated
