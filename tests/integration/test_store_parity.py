"""SQLite and PostgreSQL answer the same searches over the same corpus.

The bundled corpus is indexed by the real pipeline with the real embedding model into both
backends (small text units, so there are a few hundred). Lexical and hybrid top-10 must be the
same lists; kNN may differ only as far as HNSW is approximate (recall@10 >= 0.98 against the
SQLite store's exact search). Both backends index the same lexical terms and rank them with
the same BM25, so the lexical lists match exactly.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.support.postgres import fresh_catalog

from unified_kg_rag.bootstrap import build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import Collection, SearchMode
from unified_kg_rag.ingestion.pipeline import IndexPipeline

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "computing-history"
QUESTIONS = [
    json.loads(line)["question"]
    for line in (ROOT / "examples" / "computing-history.questions.jsonl").read_text().splitlines()
    if line.strip()
]
EXTRA = [
    "Bletchley Park codebreakers", "stored-program computer memory", "COBOL compiler",
    "vacuum tubes", "transistor Bell Labs 1947", "Lovelace's notes", "Analytical Engine",
    "Z3 Berlin", "Manchester 1948", "UNIVAC census",
]


def _config(kind: str, postgres_url: str, catalog: str) -> UkrConfig:
    return UkrConfig.model_validate({
        "chunking": {"size_tokens": 80, "overlap_tokens": 10},
        "stores": {"kind": kind, "postgres": {"url": postgres_url, "schema_name": catalog,
                                              "pool_min_size": 0}},
    })


async def _searches(config: UkrConfig, project: Path) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    async with build_app(config, project) as app:
        stores = app.index()
        report = await IndexPipeline(
            stores, embedder=app.embedder, chunk_tokenizer=app.chunk_tokenizer,
            parsers=app.parsers, config=config,
        ).run([CORPUS])
        assert report.failed == [] and report.documents_new == 12
        out["_units"] = {"n": [str(await stores.search.count(Collection.TEXT_UNITS))]}
        for query in [*QUESTIONS, *EXTRA]:
            vector = await app.embedder.embed_query(query)
            lists: dict[str, list[str]] = {}
            for mode in SearchMode:
                hits = await stores.search.search(
                    Collection.TEXT_UNITS, query_text=query, query_vector=vector, mode=mode,
                    k=10, lexical_weight=0.7, rrf_k=10)
                lists[mode.value] = [h.id for h in hits]
            out[query] = lists
    return out


def test_sqlite_and_postgres_return_the_same_top_10(postgres_url: str, tmp_path: Path) -> None:
    catalog = fresh_catalog()
    sqlite = asyncio.run(_searches(_config("sqlite", postgres_url, catalog), tmp_path / "a"))
    postgres = asyncio.run(_searches(_config("postgres", postgres_url, catalog), tmp_path / "b"))
    assert sqlite["_units"] == postgres["_units"]
    assert int(sqlite["_units"]["n"][0]) > 150
    recalls, hybrid_compared = [], 0
    for query in [*QUESTIONS, *EXTRA]:
        want, got = sqlite[query], postgres[query]
        assert got["lexical"] == want["lexical"], query
        assert want["lexical"], query
        recalls.append(len(set(got["vector"]) & set(want["vector"])) / len(want["vector"]))
        if got["vector"] == want["vector"]:  # HNSW found the exact list: fusion must agree
            assert got["hybrid"] == want["hybrid"], query
            hybrid_compared += 1
    assert sum(recalls) / len(recalls) >= 0.98
    assert hybrid_compared >= 0.8 * len(recalls)
