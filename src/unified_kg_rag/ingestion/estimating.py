"""`ukr index --estimate`: read and chunk the files a run would index, then price its model calls.

Nothing is written and no model is called: the files are discovered, read, parsed and chunked
as a run would, message archives among them are rendered alone, and the text units go to
`ingestion.graph.estimate` (extraction, gleaning, reports) and, for `raptor` with LLM summaries,
to its tree estimate. What is exact and what is rough is said there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.extraction.records import ExtractionRecord
from unified_kg_rag.domain.extraction.schema_conformance import conform_records
from unified_kg_rag.domain.index.methodologies import builds_artifact, needs_llm
from unified_kg_rag.domain.messages.transcripts import TranscriptDoc
from unified_kg_rag.domain.models import Document, TextUnit
from unified_kg_rag.ingestion.corpus import CorpusFile, discover
from unified_kg_rag.ingestion.derived import DerivedStages
from unified_kg_rag.ingestion.graph.build import GraphIndexer
from unified_kg_rag.ingestion.graph.claims import claims_to_ask
from unified_kg_rag.ingestion.graph.estimate import (
    CostEstimate,
    add_tree_cost,
    estimate_graph_cost,
)
from unified_kg_rag.ingestion.graph.shaping import shape_records
from unified_kg_rag.ingestion.messages import (
    MessageRun,
    archive_claim,
    preview_transcripts,
    transcript_entry,
)
from unified_kg_rag.ingestion.units import UnitText
from unified_kg_rag.ports import (
    DocumentParser,
    IndexStores,
    MessageSource,
    TokenCounter,
)
from unified_kg_rag.util.aio import map_bounded
from unified_kg_rag.util.errors import UsageError

__all__ = ["ParseChunk", "estimate_index"]

ParseChunk = Callable[
    [CorpusFile, TranscriptDoc | None], Awaitable[tuple[Document, list[TextUnit]]]
]
"""Parses and chunks one corpus entry (a file, or a rendered transcript) like a run would."""

_IO_CONCURRENCY = 4


async def estimate_index(
    paths: Sequence[Path],
    *,
    stores: IndexStores,
    config: UkrConfig,
    parsers: Mapping[str, DocumentParser],
    sources: Sequence[MessageSource],
    parse: ParseChunk,
    derived: DerivedStages,
    counter: TokenCounter,
    messages: MessageRun | None = None,
) -> CostEstimate:
    """Return the model calls and tokens indexing ``paths`` would spend; no call, no write.

    Args:
        paths: files and folders, as ``ukr index`` takes them.
        stores: the index's stores (stored extraction records count as free).
        config: the effective configuration.
        parsers: parser per file extension.
        sources: the message sources, in dispatch order.
        parse: parses and chunks one entry (the pipeline's own step).
        derived: the pipeline's derived stages (the graph indexer's prompts and settings,
            and the models of the ``extraction`` and ``summaries`` roles).
        counter: the token counter prompts are measured with.
        messages: options of the message archives among ``paths``.

    Raises:
        UsageError: no selected methodology calls a model, or no model serves the roles
            they call (``extraction``; ``summaries`` for a summary tree).
    """
    methodologies = config.methodologies()
    chat = derived.context.model("extraction")
    graph_calls = needs_llm(methodologies) and chat is not None
    tree = ("raptor" in methodologies and config.graph.raptor.summaries != "extractive"
            and derived.context.model("summaries") is not None)  # fmt: skip
    if not (graph_calls or tree):
        raise UsageError(
            "--estimate needs an LLM and a methodology that calls it (llm.kind, "
            "indexing.methodologies: graphrag, lightrag, hipporag, or raptor with LLM "
            "summaries): without them indexing makes no model call",
            field="llm.kind",
        )
    run = messages or MessageRun()
    found, _ = discover(paths, parsing=config.parsing, extensions=sorted(parsers),
                        claim=archive_claim(sources, run))
    items: list[tuple[CorpusFile, TranscriptDoc | None]] = [
        (f, None) for f in found if f.message_source is None
    ]
    archives = [f for f in found if f.message_source is not None]
    if archives:
        docs = await preview_transcripts(archives, sources, run)
        items += [(transcript_entry(d), d) for d in docs]

    async def parse_item(item: tuple[CorpusFile, TranscriptDoc | None]) -> list[TextUnit]:
        return (await parse(*item))[1]

    parsed = await map_bounded(items, parse_item, concurrency=_IO_CONCURRENCY)
    units = [
        UnitText(u.id, u.text, r.item[0].relative_path)
        for r in parsed if r.value is not None for u in r.value
    ]
    est = CostEstimate(units=len(units))
    if graph_calls and chat is not None:
        graph = derived.graph_indexer(stores, chat)
        stored = await graph.extractor.stored(units)
        est = estimate_graph_cost(
            units,
            [u for u in units if u.id not in stored],
            config=config,
            counter=counter,
            extraction_template=graph.extraction_template,
            gleaning_template=graph.gleaning_template,
            reports_needed=builds_artifact(graph.methodologies, "community_reports"),
            entity_types=graph.extractor.entity_types,
            claims=await claims_to_ask(
                graph.claim_extractor, units, _claim_reads(graph, config, units, stored)
            ),
            rebuild=await graph.inputs_changed(),
        )
    if tree:
        est = add_tree_cost(est, units, config=config, counter=counter)
    return est


def _claim_reads(
    graph: GraphIndexer,
    config: UkrConfig,
    units: Sequence[UnitText],
    stored: Mapping[str, ExtractionRecord],
) -> dict[str, ExtractionRecord]:
    """Return the records whose entities a build's claim prompts list (no model call).

    Grounding and a ``strict`` schema drop entities before resolution, as the build does;
    ``align`` and ``open`` change types, never names.
    """
    cfg = config.graph.extraction
    shaped = shape_records(units, stored, cfg.shaping_rules).records
    schema = graph.schema_step.schema
    if schema is None or cfg.schema_mode != "strict":
        return dict(shaped)
    return dict(conform_records(list(shaped.items()), schema, "strict")[0])
