"""Claims in `local` and `drift` on the fixture graph (real SQLite, real bundled embedder).

Two claims are written to the fixture index as a graph build writes them (`GraphWriter`, the
``claims`` collection): one about Marie Curie citing her passage, one about Warsaw citing its
passage. `local` cites them with their lineage and respects the filters; `drift`'s local
contexts show them under a ``Claims`` header.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.stages.test_local_drift import DRIFT, HYDE, _ctx, _reply, _scripted
from tests.support.graph_fixture import GraphFixture, ent, run_graph, unit
from unified_kg_rag.domain.graph.claims import Claim, claim_record
from unified_kg_rag.domain.models import Collection
from unified_kg_rag.retrieval.strategies.base import Candidate
from unified_kg_rag.retrieval.strategies.drift import DriftStrategy
from unified_kg_rag.retrieval.strategies.local import LocalStrategy

pytestmark = pytest.mark.integration

CLAIMS = [
    Claim(id="claim-marie", subject_id=ent("Marie Curie"), subject="Marie Curie",
          object_id=ent("Warsaw"), object="Warsaw", type="BIRTH", status="TRUE",
          start_date="1867", description="Marie Curie was born in Warsaw in 1867.",
          source_text="Marie Curie was born in Warsaw in 1867", text_unit_ids=(unit("marie"),)),
    Claim(id="claim-warsaw", subject_id=ent("Warsaw"), subject="Warsaw", type="CAPITAL",
          status="TRUE", description="Warsaw is the capital of Poland.",
          text_unit_ids=(unit("warsaw"),)),
]  # fmt: skip


async def _with_claims(fx: GraphFixture) -> None:
    stores = fx.app.index()
    records = [claim_record(c) for c in CLAIMS]
    vectors = await fx.app.embedder.embed_documents([r.text for r in records])
    await stores.search.upsert(Collection.CLAIMS, records, vectors)


def _claims(result_buckets: list[list[Candidate]]) -> list[Candidate]:
    return [c for b in result_buckets for c in b if c.kind == "claim"]


def test_local_cites_the_claims_about_the_expanded_entities_under_the_filters(
    tmp_path: Path,
) -> None:
    async def body(fx: GraphFixture) -> tuple[list[Candidate], list[Candidate], list[Candidate]]:
        await _with_claims(fx)
        question = "Where was Marie Curie born?"
        plain = await LocalStrategy().retrieve(_ctx(fx, question))
        filtered = await LocalStrategy().retrieve(
            _ctx(fx, question, filters={"path": "warsaw.txt"}))
        off = await LocalStrategy().retrieve(
            _ctx(fx, question, local_search={"claim_candidates": 0}))
        return tuple(_claims([b.candidates for b in r.buckets])  # type: ignore[return-value]
                     for r in (plain, filtered, off))

    plain, filtered, off = run_graph(tmp_path, body)
    assert {c.id for c in plain} == {"claim-marie", "claim-warsaw"}
    marie = next(c for c in plain if c.id == "claim-marie")
    assert marie.text_unit_ids == (unit("marie"),) and marie.document_ids == (unit("marie"),)
    assert marie.metadata["status"] == "TRUE" and marie.metadata["start_date"] == "1867"
    # under a path filter only the claim citing a passing unit stays
    assert [c.id for c in filtered] == ["claim-warsaw"]
    assert off == []


def test_drift_local_contexts_show_the_claims(tmp_path: Path) -> None:
    model = _scripted(
        HYDE,
        ("step 2", _reply("The reports say Warsaw.", 60, ["Where was Marie Curie born?"])),
        ("step 3", _reply("Warsaw.", 80)),
    )  # fmt: skip

    async def body(fx: GraphFixture) -> list[str]:
        await _with_claims(fx)
        ctx = _ctx(fx, "Where was Marie Curie born?", model, drift_search=DRIFT)
        await DriftStrategy().retrieve(ctx)
        return list(model.prompts)

    prompts = run_graph(tmp_path, body)
    actions = [p for p in prompts if p.startswith("DRIFT search, step 3")]
    assert actions and any("-----Claims-----" in p and "Marie Curie — BIRTH — Warsaw" in p
                           for p in actions)  # fmt: skip
