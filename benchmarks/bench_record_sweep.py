"""What sweeping orphan extraction records costs (issue #15, item 14), and what a re-run costs.

An index of N one-unit documents (default 3,000) is built with the `scripted` LLM (in-process,
every extraction answered at once), the hashing fake embedder and a real SQLite file, with
methodology ``lightrag`` (extraction and resolution; no communities, so the figures are the
record work's). Then, each timed as a whole ``IndexPipeline.run`` on the unchanged corpus:

1. an unchanged re-run: the graph build is skipped by its digest; the sweep costs one count
   query of the extraction records (compared with the count the last build left; timed
   alone too);
2. the same after planting ``--orphans`` records of removed text (what a run killed between
   removing text units and deleting their records leaves): the count differs, so the run
   reads every text unit, fingerprints it, lists the record keys and deletes the orphans;
3. ``describe_index`` with the extractor (``ukr status``'s orphan count: the same reading and
   fingerprinting, no write).

Usage:  python benchmarks/bench_record_sweep.py [--units N] [--orphans K] [--repeat R]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes import FakeEmbedder  # noqa: E402

from unified_kg_rag.bootstrap import App, build_app  # noqa: E402
from unified_kg_rag.config.models import UkrConfig  # noqa: E402
from unified_kg_rag.domain.extraction.records import ExtractionRecord  # noqa: E402
from unified_kg_rag.ingestion.graph.build import graph_extractor  # noqa: E402
from unified_kg_rag.ingestion.graph.extract import RECORDS_NAMESPACE  # noqa: E402
from unified_kg_rag.ingestion.pipeline import IndexPipeline  # noqa: E402
from unified_kg_rag.ingestion.status import describe_index  # noqa: E402

REPLY = (
    "<entities><entity><name>Ada Lovelace</name><type>PERSON</type><description>A "
    "mathematician.</description></entity><entity><name>Analytical Engine</name><type>"
    "PRODUCT</type><description>A machine.</description></entity></entities><relationships>"
    "<relationship><source>Ada Lovelace</source><target>Analytical Engine</target><type>"
    "PROGRAMMED</type><description>She programmed it.</description><strength>7</strength>"
    "</relationship></relationships>"
)


def _config() -> UkrConfig:
    return UkrConfig.model_validate({
        "llm": {"kind": "scripted", "scripted": {"default_reply": REPLY}},
        "indexing": {"methodologies": ["lightrag"], "batch_documents": 512},
        "graph": {"extraction": {"max_gleaning_rounds": 1}},
    })


def _pipeline(app: App, embedder: FakeEmbedder) -> IndexPipeline:
    return IndexPipeline(
        app.index(), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers, config=app.config, chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer,
    )


async def _timed(coro: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = await coro
    return time.perf_counter() - started, value


async def main(units: int, orphans: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for i in range(units):
            (corpus / f"d{i:05}.txt").write_text(
                f"Note {i}: Ada Lovelace wrote about the Analytical Engine, item {i}.",
                encoding="utf-8")
        embedder = FakeEmbedder()
        async with build_app(_config(), Path(tmp) / "p") as app:
            built_s, built = await _timed(_pipeline(app, embedder).run([corpus]))
            assert built.exit_code == 0, built
            records = app.index().records
            assert app.chat_model is not None
            extractor = graph_extractor(app.config, app.chat_model, records)
            rerun, swept, status, count = [], [], [], []
            for _ in range(repeat):
                seconds, report = await _timed(_pipeline(app, embedder).run([corpus]))
                assert report.graph is not None
                assert report.graph.skipped_reason
                assert report.records_removed == 0
                rerun.append(seconds)
                seconds, _ = await _timed(records.count(RECORDS_NAMESPACE))
                count.append(seconds)
                for k in range(orphans):
                    key = extractor.fingerprint(f"removed passage {k} {time.time()}")
                    await records.put(RECORDS_NAMESPACE, key,
                                      ExtractionRecord(fingerprint=key).model_dump_json())
                seconds, info = await _timed(describe_index(app.index(), extractor=extractor))
                assert info.extraction_records_orphaned == orphans
                status.append(seconds)
                seconds, report = await _timed(_pipeline(app, embedder).run([corpus]))
                assert report.records_removed == orphans, report.records_removed
                swept.append(seconds)
        return {
            "units": units, "orphans": orphans, "first_build_s": round(built_s, 2),
            "unchanged_rerun_s": round(statistics.median(rerun), 3),
            "of_which_count_check_s": round(statistics.median(count), 4),
            "rerun_with_sweep_s": round(statistics.median(swept), 3),
            "status_orphan_count_s": round(statistics.median(status), 3),
        }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=3000)
    parser.add_argument("--orphans", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    figures = asyncio.run(main(args.units, args.orphans, args.repeat))
    for name, value in figures.items():
        print(f"{name:24} {value}")
