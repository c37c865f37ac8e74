"""Recency through the real pipeline: text units carry their time, ``temporal_decay`` scores it.

Real SQLite stores (and one PostgreSQL run), the bundled embedding model, real JSON Lines
message archives read by the `jsonl` source and real files with set modification times; no
LLM (``lazy`` indexing). Every ``temporal`` signal is checked against
``0.5 ** (age / half_life)`` computed by hand from the times written into the corpus, at a
fixed ``now_s``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from unified_kg_rag.adapters.messages.jsonl import JsonLinesSource
from unified_kg_rag.adapters.registry import EMBEDDERS
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import Collection, IndexRecord
from unified_kg_rag.domain.text.unit_times import TIME_FIELDS
from unified_kg_rag.ingestion.messages import MessageRun
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.ports import Embedder, IndexStores
from unified_kg_rag.retrieval.pipeline import Candidate, PipelineRun, StageInput
from unified_kg_rag.retrieval.pipeline_presets import (
    PipelineComponents,
    pipeline_from_spec,
    preset_pipeline,
)
from unified_kg_rag.retrieval.pipeline_stages import HydrateStage

pytestmark = pytest.mark.integration

DAY = 86_400.0
NOW = datetime(2025, 7, 1, tzinfo=UTC).timestamp()
HALF_LIFE_DAYS = 30
TU = Collection.TEXT_UNITS
QUESTION = "What did we decide recently about the team offsite?"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2 model, loaded once for the module."""
    return EMBEDDERS.get("local")(UkrConfig().embeddings)


def _msg(guid: str, thread: str, name: str, stamp: str, text: str, sender: str = "Carol"
         ) -> dict[str, Any]:
    return {"guid": guid, "thread_id": thread, "thread_name": name, "sender": sender,
            "timestamp": stamp, "text": text}


# an old plan and a newer changed plan on the same topic, in two threads, and an unrelated one
ARCHIVE = [
    _msg("o1", "offsite-2024", "Offsite planning", "2024-09-10T10:00:00Z",
         "Decision made: the team offsite will be in Lisbon in June, we booked the riverside "
         "hotel."),
    _msg("o2", "offsite-2024", "Offsite planning", "2024-09-10T10:05:00Z",
         "Great, Lisbon for the offsite works for everyone.", sender="Ed"),
    _msg("n1", "offsite-2025", "Offsite update", "2025-06-20T09:00:00Z",
         "Change of plan: we are moving it to Porto in September, the Lisbon booking is "
         "cancelled."),
    _msg("n2", "offsite-2025", "Offsite update", "2025-06-20T09:30:00Z",
         "Porto it is, I will send the new agenda.", sender="Ed"),
    _msg("l1", "lunch", "Lunch", "2025-06-25T12:00:00Z", "Anyone up for pizza today?",
         sender="Bob"),
]
NEWEST = {"offsite-2024::2024-09-10": ("2024-09-10T10:05:00+00:00", "2024-09-10T10:00:00+00:00"),
          "offsite-2025::2025-06-20": ("2025-06-20T09:30:00+00:00", "2025-06-20T09:00:00+00:00"),
          "lunch::2025-06-25": ("2025-06-25T12:00:00+00:00", "2025-06-25T12:00:00+00:00")}
"""Transcript key → (its unit's newest message, its oldest), ISO-8601 UTC."""

RECENCY = {
    "stages": [{"stage": "semantic", "limit": 10}, {"stage": "hydrate"},
               {"stage": "temporal_decay", "half_life_days": HALF_LIFE_DAYS, "now_s": NOW}],
    "scorer": {"kind": "weighted", "weights": {"semantic": 0.5, "temporal": 0.5}},
}  # fmt: skip


def _decay(stamp: float) -> float:
    return float(0.5 ** ((NOW - stamp) / (HALF_LIFE_DAYS * DAY)))


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def _config(extra: dict[str, Any] | None = None) -> UkrConfig:
    return UkrConfig.model_validate({"indexing": {"methodologies": ["lazy"]}, **(extra or {})})


async def _index(app: App, embedder: Embedder, paths: Sequence[Path]) -> IndexReport:
    pipeline = IndexPipeline(
        app.index(), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers, config=app.config, keyphrase_extractor=app.keyphrase_extractor,
        message_sources=[JsonLinesSource()], chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer,
    )
    run = MessageRun(max_chars=app.config.messages.transcript_max_chars)
    return await pipeline.run(paths, confirm_deletions=True, messages=run)


def _components(stores: IndexStores, embedder: Embedder) -> PipelineComponents:
    return PipelineComponents(stores.search, embedder, stores=stores)


async def _records(stores: IndexStores) -> dict[str, IndexRecord]:
    """Path (transcript key or file path) → its one stored text unit record."""
    records = await stores.search.get(TU, await stores.search.ids(TU))
    return {str(r.fields["path"]): r for r in records}


async def _strip_times(stores: IndexStores) -> None:
    """Make the index look built before text units carried times (vectors kept)."""
    ids = await stores.search.ids(TU)
    by_id = {r.id: r for r in await stores.search.get(TU, ids)}
    found, vectors = await stores.search.vectors(TU, ids)
    await stores.search.upsert(TU, [
        IndexRecord(id=i, text=by_id[i].text,
                    fields={k: v for k, v in by_id[i].fields.items() if k not in TIME_FIELDS})
        for i in found], vectors)  # fmt: skip


def _by_path(run: PipelineRun) -> dict[str, dict[str, float]]:
    return {str(r.candidate.metadata["path"]): dict(r.signals) for r in run.results}


def _top(run: PipelineRun) -> str:
    return str(run.results[0].candidate.metadata["path"])


def test_recently_is_answered_from_the_newer_thread(tmp_path: Path, embedder: Embedder) -> None:
    archive = tmp_path / "chat.jsonl"
    archive.write_text("".join(json.dumps(r) + "\n" for r in ARCHIVE), encoding="utf-8")

    async def main() -> dict[str, Any]:
        async with build_app(_config(), tmp_path / "p") as app:
            await _index(app, embedder, [archive])
            stores = app.index()
            comps = _components(stores, embedder)
            out: dict[str, Any] = {"records": await _records(stores)}
            out["recency"] = await pipeline_from_spec(RECENCY, comps).execute(QUESTION, k=3)
            out["minimal"] = await preset_pipeline("minimal", comps).execute(QUESTION, k=3)
            first = {**RECENCY, "stages": [*RECENCY["stages"][:2], {
                **RECENCY["stages"][2], "timestamp_field": "timestamp_first"}]}
            out["first"] = await pipeline_from_spec(first, comps).execute(QUESTION, k=3)
            # an index built before units carried times: the spans give the same times
            await _strip_times(stores)
            out["stripped"] = await _records(stores)
            out["fallback"] = await pipeline_from_spec(RECENCY, comps).execute(QUESTION, k=3)
            off = {**RECENCY, "stages": [*RECENCY["stages"][:2], {
                **RECENCY["stages"][2], "fallback": False}]}
            out["off"] = await pipeline_from_spec(off, comps).execute(QUESTION, k=3)
            out["again"] = await _index(app, embedder, [archive])
            return out

    got = asyncio.run(main())
    records: dict[str, IndexRecord] = got["records"]
    assert set(records) == set(NEWEST)
    for key, (newest, oldest) in NEWEST.items():
        fields = records[key].fields
        assert (fields["timestamp"], fields["timestamp_first"], fields["timestamp_source"]) == (
            newest, oldest, "messages")

    recency, minimal = got["recency"], got["minimal"]
    # by meaning alone the old plan is the best match; with recency the newer thread wins
    assert _top(minimal) == "offsite-2024::2024-09-10"
    assert _top(recency) == "offsite-2025::2025-06-20"
    signals = _by_path(recency)
    for key, values in signals.items():
        assert values["temporal"] == pytest.approx(_decay(_epoch(NEWEST[key][0])), rel=1e-9)
    assert signals["offsite-2025::2025-06-20"]["temporal"] == pytest.approx(
        0.5 ** ((10 * DAY + 14.5 * 3600) / (30 * DAY)))  # 10 days 14.5 hours old
    for result in recency.results:
        assert result.score == pytest.approx(
            0.5 * result.signals["semantic"] + 0.5 * result.signals["temporal"])
    for key, values in _by_path(got["first"]).items():
        assert values["temporal"] == pytest.approx(_decay(_epoch(NEWEST[key][1])), rel=1e-9)

    # upgrade: units stored without times score the same, looked up in the message spans
    assert not any(set(TIME_FIELDS) & set(r.fields) for r in got["stripped"].values())
    for key, values in _by_path(got["fallback"]).items():
        assert values["temporal"] == pytest.approx(signals[key]["temporal"], rel=1e-9)
    assert _top(got["fallback"]) == "offsite-2025::2025-06-20"
    assert all(values["temporal"] == 0.0 for values in _by_path(got["off"]).values())
    # and an unchanged corpus re-indexes, re-embeds nothing after the upgrade
    again: IndexReport = got["again"]
    assert again.messages is not None and again.messages.unchanged == 3
    assert again.text_units_embedded == 0


def test_documents_are_scored_by_their_stated_date_or_modification_time(
    tmp_path: Path, embedder: Embedder
) -> None:
    corpus = tmp_path / "notes"
    corpus.mkdir()
    old, new = corpus / "offsite-2023.md", corpus / "offsite-2025.md"
    old.write_text("# Offsite\n\nWe decided the team offsite goes to Lisbon.\n", encoding="utf-8")
    new.write_text("# Offsite\n\nUpdate: the offsite moved to Porto.\n", encoding="utf-8")
    old_s = datetime(2023, 5, 1, 8, tzinfo=UTC).timestamp()
    new_s = datetime(2025, 6, 1, tzinfo=UTC).timestamp()
    os.utime(old, (old_s, old_s))
    os.utime(new, (new_s, new_s))
    # a date stated in front matter wins over the file time (written now, after NOW)
    stated = corpus / "budget.md"
    stated.write_text("---\nlastmod: 2019-01-01\n---\n# Budget\n\nThe offsite budget was "
                      "approved.\n", encoding="utf-8")

    async def main() -> dict[str, Any]:
        async with build_app(_config(), tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            stores = app.index()
            out: dict[str, Any] = {"records": await _records(stores)}
            recency = pipeline_from_spec(RECENCY, _components(stores, embedder))
            out["recency"] = await recency.execute(QUESTION, k=3)
            await _strip_times(stores)
            out["registry"] = {r.path: r.updated_at
                               for r in await stores.registry.list_records()}  # fmt: skip
            # the registry's times are the wall clock of this run: score them 30 days later
            out["later"] = max(out["registry"].values()) + HALF_LIFE_DAYS * DAY
            later = {**RECENCY, "stages": [*RECENCY["stages"][:2], {
                **RECENCY["stages"][2], "now_s": out["later"]}]}
            out["fallback"] = await pipeline_from_spec(
                later, _components(stores, embedder)).execute(QUESTION, k=3)
            return out

    got = asyncio.run(main())
    records: dict[str, IndexRecord] = got["records"]
    assert {p: (r.fields["timestamp"], r.fields["timestamp_source"]) for p, r in records.items()
            } == {"offsite-2023.md": ("2023-05-01T08:00:00+00:00", "modified"),
                  "offsite-2025.md": ("2025-06-01T00:00:00+00:00", "modified"),
                  "budget.md": ("2019-01-01T00:00:00+00:00", "stated")}
    assert "timestamp_first" not in records["offsite-2023.md"].fields
    signals = _by_path(got["recency"])
    assert signals["offsite-2023.md"]["temporal"] == pytest.approx(_decay(old_s), rel=1e-9)
    assert signals["offsite-2025.md"]["temporal"] == pytest.approx(
        0.5 ** (30 / 30))  # exactly one half-life old
    assert signals["budget.md"]["temporal"] == pytest.approx(
        _decay(datetime(2019, 1, 1, tzinfo=UTC).timestamp()), rel=1e-9)
    assert _top(got["recency"]) == "offsite-2025.md"
    # an index built before: the doc registry's time of each document (its last indexing)
    for path, values in _by_path(got["fallback"]).items():
        age = got["later"] - got["registry"][path]
        assert values["temporal"] == pytest.approx(0.5 ** (age / (HALF_LIFE_DAYS * DAY)))
        assert 0.49 < values["temporal"] <= 0.5  # both indexed within seconds of each other


def test_a_changed_file_gives_its_kept_units_the_new_time_without_embedding_them(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Upgrading: an index built before times were stored re-embeds nothing; a file that
    changes later gets its new time on every unit, the reused ones rewritten with their
    stored vectors."""
    corpus = tmp_path / "notes"
    corpus.mkdir()
    doc = corpus / "plan.md"
    paragraphs = [f"Paragraph {i}: the offsite agenda item number {i} is settled." for i in
                  range(4)]  # fmt: skip
    doc.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    first_s, later_s = 1_700_000_000.0, 1_720_000_000.0
    os.utime(doc, (first_s, first_s))
    config = _config({"chunking": {"size_tokens": 16, "overlap_tokens": 0}})

    async def main() -> tuple[IndexReport, list[IndexRecord], list[IndexRecord], Any, Any]:
        async with build_app(config, tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            stores = app.index()
            await _strip_times(stores)
            before = await stores.search.get(TU, await stores.search.ids(TU))
            _, vectors_before = await stores.search.vectors(TU, [r.id for r in before])
            doc.write_text("\n\n".join([*paragraphs, "Paragraph 4: Porto, finally."]) + "\n",
                           encoding="utf-8")
            os.utime(doc, (later_s, later_s))
            report = await _index(app, embedder, [corpus])
            after = await stores.search.get(TU, await stores.search.ids(TU))
            _, vectors_after = await stores.search.vectors(TU, [r.id for r in before])
            return report, before, after, vectors_before, vectors_after

    report, before, after, vectors_before, vectors_after = asyncio.run(main())
    assert len(before) >= 2 and not any("timestamp" in r.fields for r in before)
    assert {r.id for r in before} < {r.id for r in after}  # every old unit kept its id
    assert report.documents_changed == 1
    assert report.text_units_embedded == len(after) - len(before)  # only the new units
    assert {r.fields["timestamp"] for r in after} == {"2024-07-03T09:46:40+00:00"}
    assert vectors_after.tolist() == vectors_before.tolist()


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres",
                                                            marks=pytest.mark.postgres)])
def test_the_time_fields_round_trip_through_filters_and_hydrate(
    tmp_path: Path, embedder: Embedder, backend: str, request: pytest.FixtureRequest
) -> None:
    extra: dict[str, Any] = {}
    if backend == "postgres":
        from tests.support.postgres import fresh_catalog

        extra = {"stores": {"kind": "postgres", "postgres": {
            "url": request.getfixturevalue("postgres_url"), "schema_name": fresh_catalog()}}}
    archive = tmp_path / "chat.jsonl"
    archive.write_text("".join(json.dumps(r) + "\n" for r in ARCHIVE), encoding="utf-8")
    newest = NEWEST["offsite-2025::2025-06-20"][0]

    async def main() -> tuple[PipelineRun, list[Candidate], PipelineRun]:
        async with build_app(_config(extra), tmp_path / "p") as app:
            await _index(app, embedder, [archive])
            stores = app.index()
            comps = _components(stores, embedder)
            filtered = await pipeline_from_spec(RECENCY, comps).execute(
                QUESTION, k=5, filters={"timestamp": newest})
            ids = await stores.search.ids(TU)
            hydrated = await HydrateStage(stores.search).execute(
                StageInput(QUESTION, [Candidate(i) for i in ids], 5))
            lexical = {**RECENCY, "stages": [{"stage": "lexical", "limit": 5},
                                             *RECENCY["stages"][1:]]}
            by_words = await pipeline_from_spec(lexical, comps).execute("Porto Lisbon", k=5)
            return filtered, hydrated.candidates, by_words

    filtered, hydrated, by_words = asyncio.run(main())
    assert [r.candidate.metadata["path"] for r in filtered.results] == ["offsite-2025::2025-06-20"]
    assert filtered.results[0].signals["temporal"] == pytest.approx(_decay(_epoch(newest)))
    assert {str(c.metadata["path"]): (c.metadata["timestamp"], c.metadata["timestamp_first"])
            for c in hydrated} == NEWEST
    # lexical hits carry the same stored fields
    for result in by_words.results:
        key = str(result.candidate.metadata["path"])
        assert result.signals["temporal"] == pytest.approx(_decay(_epoch(NEWEST[key][0])))
