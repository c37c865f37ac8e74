"""The time fields of text units (`domain.text.unit_times`) and the ``temporal_decay`` stage's
reading of them (`retrieval.pipeline_time`): parsing, the message and document rules, the
definition parameters and the look-up of units stored without a time, over the fakes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from tests.fakes.graph_store import FakeGraphStore
from tests.fakes.search_index import FakeSearchIndex
from tests.fakes.stores import FakeDocRegistry, FakeRecordStore

from unified_kg_rag.domain.messages.manifest import SPANS_NAMESPACE, spans_record
from unified_kg_rag.domain.messages.transcripts import SourceMessage, render_transcripts
from unified_kg_rag.domain.models import Collection, DocRecord, DocStatus, IndexRecord
from unified_kg_rag.domain.text.unit_times import (
    document_times,
    epoch_s,
    iso_utc,
    message_times,
)
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.pipeline import Candidate, StageInput
from unified_kg_rag.retrieval.pipeline_presets import PipelineComponents, pipeline_from_spec
from unified_kg_rag.retrieval.pipeline_time import DAY_S, StoredUnitTimes, temporal_decay_stage
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.unit

T0 = datetime(2024, 3, 1, 9, 30, tzinfo=UTC)


def test_epoch_s_reads_epoch_seconds_iso_text_and_datetimes() -> None:
    assert epoch_s(1_700_000_000) == 1_700_000_000.0
    assert epoch_s("2024-03-01T09:30:00Z") == T0.timestamp()
    assert epoch_s("2024-03-01T10:30:00+01:00") == T0.timestamp()
    assert epoch_s("2024-03-01T09:30:00") == T0.timestamp()  # naive: UTC
    assert epoch_s(T0.replace(tzinfo=None)) == T0.timestamp()
    assert epoch_s(T0.astimezone(timezone(timedelta(hours=-5)))) == T0.timestamp()
    for not_a_time in (None, True, "", "  ", "yesterday", [1]):
        assert epoch_s(not_a_time) is None
    assert iso_utc(T0.timestamp()) == "2024-03-01T09:30:00+00:00"
    with pytest.raises(ValueError, match="out of range"):
        iso_utc(1e20)


def test_message_times_are_the_newest_and_oldest_dated_message() -> None:
    got = message_times(["2024-03-02T08:00:00+00:00", "", "2024-03-01T09:30:00+00:00",
                         "2024-03-01T23:00:00-05:00"])  # fmt: skip
    assert got == {"timestamp": "2024-03-02T08:00:00+00:00",
                   "timestamp_first": "2024-03-01T09:30:00+00:00",
                   "timestamp_source": "messages"}  # fmt: skip
    assert message_times(["", ""]) == {}
    assert message_times([]) == {}


def test_a_document_states_its_date_or_gives_its_modification_time() -> None:
    mtime = T0.timestamp() + 3600
    assert document_times({"date": "2021-05-04"}, mtime) == {
        "timestamp": "2021-05-04T00:00:00+00:00", "timestamp_source": "stated"}
    # `modified` is preferred to `date`, which is preferred to `created`
    assert document_times({"created": "2020-01-01", "date": "2021-01-01",
                           "modified": "2022-02-02"}, mtime)["timestamp"] == \
        "2022-02-02T00:00:00+00:00"  # fmt: skip
    assert document_times({"created": "2020-01-01", "date": "2021-01-01"}, mtime)[
        "timestamp"] == "2021-01-01T00:00:00+00:00"
    # an unreadable stated date falls through to the file time
    assert document_times({"date": "last spring", "encoding": "utf-8"}, mtime) == {
        "timestamp": "2024-03-01T10:30:00+00:00", "timestamp_source": "modified"}
    assert document_times({}, None) == {}


def _params(**given: Any) -> dict[str, Any]:
    return given


def test_half_life_in_days_or_seconds_but_not_both() -> None:
    assert temporal_decay_stage(_params(half_life_days=30), None).half_life_s == 30 * DAY_S
    assert temporal_decay_stage(_params(half_life_days=0.5), None).half_life_s == 43_200.0
    assert temporal_decay_stage(_params(half_life_s=600), None).half_life_s == 600
    assert temporal_decay_stage({}, None).half_life_s == 90 * DAY_S
    comps = PipelineComponents(FakeSearchIndex(), embedder=None)  # type: ignore[arg-type]
    bad = [({"half_life_s": 60, "half_life_days": 1}, "half_life_s or half_life_days, not both"),
           ({"half_life_days": "a week"}, "half_life_days must be a positive number of days"),
           ({"half_life_days": -3}, "half_life_days must be a positive number of days, got -3"),
           ({"half_life_s": 0}, "half life must be positive"),
           ({"fallback": "yes"}, "fallback must be true or false"),
           ({"half_life_weeks": 2}, "half_life_weeks")]  # fmt: skip
    for params, message in bad:
        spec = {"stages": [{"stage": "hydrate"}, {"stage": "temporal_decay", **params}]}
        with pytest.raises(ConfigurationError, match=message) as caught:
            pipeline_from_spec(spec, comps)
        unknown = "half_life_weeks" in params  # an unknown parameter is named itself
        assert caught.value.field == ("stages.1.half_life_weeks" if unknown else "stages.1")
        assert "\n" not in str(caught.value)


def _stores() -> IndexStores:
    return IndexStores("default", FakeSearchIndex(), FakeGraphStore(), FakeDocRegistry(),
                       FakeRecordStore())  # fmt: skip


def test_units_stored_without_a_time_are_looked_up_in_spans_and_registry() -> None:
    """An index built before units carried times: a transcript unit gets its messages' times
    from the stored spans (exactly), a file's unit its document's registry time."""
    messages = [SourceMessage(guid=f"m{i}", thread_id="t", thread_name="T", sender_name="Bob",
                              timestamp=T0 + timedelta(hours=i), text=f"message {i}")
                for i in range(3)]  # fmt: skip
    doc = render_transcripts(messages)[0]
    second, third = doc.messages[1], doc.messages[2]

    async def main() -> tuple[dict[str, float], dict[str, float], list[float]]:
        stores = _stores()
        await stores.records.put(SPANS_NAMESPACE, "tdoc", spans_record(doc))
        await stores.registry.put([DocRecord(
            document_id="fdoc", path="a.md", source_scope="/c", content_hash="h",
            status=DocStatus.PROCESSED, updated_at=1_600_000_000.0)])
        # u_msg is not hydrated: its record is read in one batch
        await stores.search.upsert(Collection.TEXT_UNITS, [IndexRecord(
            id="u_msg", text="...", fields={"document_id": "tdoc", "start_char": second.start,
                                            "end_char": third.end})])  # fmt: skip
        cands = [Candidate("u_msg"),
                 Candidate("u_file", metadata={"document_id": "fdoc"}),
                 Candidate("u_gone", metadata={"document_id": "nowhere"}),
                 Candidate("e1", kind="entity", metadata={"document_id": "fdoc"})]
        source = StoredUnitTimes(stores)
        newest = await source.times(cands)
        oldest = await source.times(cands, oldest=True)
        stage = temporal_decay_stage({"half_life_days": 1, "now_s": T0.timestamp() + DAY_S},
                                     stores)  # fmt: skip
        out = await stage.execute(StageInput("q", cands, 10))
        return newest, oldest, [c.signals["temporal"] for c in out.candidates]

    newest, oldest, signals = asyncio.run(main())
    assert newest == {"u_msg": (T0 + timedelta(hours=2)).timestamp(), "u_file": 1_600_000_000.0}
    assert oldest["u_msg"] == (T0 + timedelta(hours=1)).timestamp()
    now = T0.timestamp() + DAY_S
    age_file = now - 1_600_000_000.0
    assert signals[0] == pytest.approx(0.5 ** ((now - newest["u_msg"]) / DAY_S))
    assert signals[0] == pytest.approx(0.5 ** (22 / 24))
    assert signals[1] == pytest.approx(0.5 ** (age_file / DAY_S))
    assert signals[2:] == [0.0, 0.0]  # unknown document; not a text unit


def test_without_a_fallback_units_lacking_a_time_score_missing() -> None:
    async def main() -> list[float]:
        stores = _stores()
        await stores.registry.put([DocRecord(
            document_id="fdoc", path="a.md", source_scope="/c", content_hash="h",
            status=DocStatus.PROCESSED, updated_at=1_600_000_000.0)])
        stage = temporal_decay_stage({"missing": 0.3, "fallback": False, "now_s": 1.7e9}, stores)
        cands = [Candidate("u", metadata={"document_id": "fdoc"}),
                 Candidate("v", metadata={"timestamp_first": "2023-11-14T22:13:20Z",
                                          "timestamp": 1.7e9 - 90 * DAY_S})]
        out = await stage.execute(StageInput("q", cands, 10))
        seen = [c.signals["temporal"] for c in out.candidates]
        first = temporal_decay_stage({"timestamp_field": "timestamp_first", "now_s": 1.7e9},
                                     None)  # fmt: skip
        docs = [Candidate("w", metadata={"timestamp": 1.7e9 - 180 * DAY_S})]
        out2 = await first.execute(StageInput("q", [*cands[1:], *docs], 10))
        return [*seen, *(c.signals["temporal"] for c in out2.candidates)]

    got = asyncio.run(main())
    assert got[0] == 0.3
    assert got[1] == pytest.approx(0.5)  # timestamp: 90 days old
    # timestamp_first of v is 1.7e9 - 0 s; a document unit without it gives its timestamp
    assert got[2] == pytest.approx(1.0)
    assert got[3] == pytest.approx(0.25)
