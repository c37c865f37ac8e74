"""A small, hand-written knowledge-graph index for strategy tests (real SQLite, real embedder).

Seven one-passage documents: a two-hop chain (Marie Curie → born in Warsaw → capital of
Poland; Marie Curie → Pierre Curie → taught at the Sorbonne → in Paris), one river, and two
unrelated bread passages. Entities, relationships, a two-level community hierarchy (level 0
= top, GraphRAG's convention) and a report per community are written exactly as a graph build
writes them (`GraphWriter`), and the index records the ``graphrag`` and ``lightrag``
methodologies, so every strategy can run on it.

Usage::

    async with graph_app(tmp_path) as fx:
        chain = fx.chain()
        out = await chain.retrieve("Where was Marie Curie born?", strategy="local")
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import QueryConfig, UkrConfig
from unified_kg_rag.domain.graph.communities import community_id
from unified_kg_rag.domain.identity import entity_id
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE, METHODOLOGIES_KEY
from unified_kg_rag.domain.models import (
    Collection,
    Community,
    CommunityReport,
    Entity,
    IndexRecord,
    Relationship,
)
from unified_kg_rag.ingestion.graph.write import GraphItems, GraphWriter
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.retrieval.chain import RAGChain

__all__ = ["DOCS", "GraphFixture", "ent", "graph_app", "rel_id", "run_graph", "unit"]

DOCS: dict[str, str] = {
    "marie": "Marie Curie was born in Warsaw in 1867. With Pierre Curie she discovered "
    "polonium and radium.",
    "warsaw": "Warsaw is the capital and largest city of Poland. The Vistula river flows "
    "through Warsaw.",
    "pierre": "Pierre Curie was a French physicist. He taught physics at the Sorbonne and "
    "shared the 1903 Nobel Prize.",
    "sorbonne": "The Sorbonne is a historic university in Paris, founded in 1257 in the "
    "Latin Quarter.",
    "vistula": "The Vistula is the longest river in Poland, flowing 1,047 kilometres to the "
    "Baltic Sea.",
    "bread": "Sourdough bread is leavened by a starter culture instead of baker's yeast.",
    "starter": "A sourdough starter culture holds wild yeast and lactic acid bacteria, fed "
    "with flour and water.",
}

# name, type, description, documents cited
ENTITIES: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("Marie Curie", "PERSON", "Physicist and chemist born in Warsaw who discovered polonium "
     "and radium.", ("marie",)),
    ("Pierre Curie", "PERSON", "French physicist who taught at the Sorbonne and worked with "
     "Marie Curie.", ("marie", "pierre")),
    ("Polonium", "CONCEPT", "Chemical element discovered by Marie and Pierre Curie.",
     ("marie",)),
    ("Warsaw", "GEO", "Capital and largest city of Poland, on the Vistula.",
     ("marie", "warsaw")),
    ("Poland", "GEO", "Country in Central Europe whose capital is Warsaw.",
     ("warsaw", "vistula")),
    ("Vistula", "GEO", "Longest river in Poland, flowing through Warsaw to the Baltic Sea.",
     ("warsaw", "vistula")),
    ("Sorbonne", "ORGANIZATION", "Historic university in Paris where Pierre Curie taught.",
     ("pierre", "sorbonne")),
    ("Paris", "GEO", "Capital of France, home of the Sorbonne.", ("sorbonne",)),
    ("Sourdough", "CONCEPT", "Bread leavened by a starter culture.", ("bread", "starter")),
    ("Starter Culture", "CONCEPT", "Wild yeast and lactic acid bacteria fed with flour and "
     "water.", ("bread", "starter")),
]  # fmt: skip

# source, target, type, description, weight, documents cited
RELATIONSHIPS: list[tuple[str, str, str, str, float, tuple[str, ...]]] = [
    ("Marie Curie", "Warsaw", "BORN_IN", "Marie Curie was born in Warsaw.", 9.0, ("marie",)),
    ("Marie Curie", "Pierre Curie", "WORKED_WITH", "Marie and Pierre Curie discovered "
     "polonium together.", 8.0, ("marie",)),
    ("Marie Curie", "Polonium", "DISCOVERED", "Marie Curie discovered polonium.", 7.0,
     ("marie",)),
    ("Warsaw", "Poland", "CAPITAL_OF", "Warsaw is the capital of Poland.", 9.0, ("warsaw",)),
    ("Vistula", "Warsaw", "FLOWS_THROUGH", "The Vistula flows through Warsaw.", 5.0,
     ("warsaw",)),
    ("Vistula", "Poland", "LONGEST_RIVER_OF", "The Vistula is the longest river in Poland.",
     6.0, ("vistula",)),
    ("Pierre Curie", "Sorbonne", "TAUGHT_AT", "Pierre Curie taught physics at the Sorbonne.",
     8.0, ("pierre",)),
    ("Sorbonne", "Paris", "LOCATED_IN", "The Sorbonne is a university in Paris.", 7.0,
     ("sorbonne",)),
    ("Sourdough", "Starter Culture", "LEAVENED_BY", "Sourdough bread is leavened by a starter "
     "culture.", 8.0, ("bread", "starter")),
]  # fmt: skip

# level-0 (top) communities, each with optional level-1 children: name -> members
TOP: dict[str, tuple[str, ...]] = {
    "science": ("Marie Curie", "Pierre Curie", "Polonium", "Sorbonne", "Paris"),
    "poland": ("Warsaw", "Poland", "Vistula"),
    "bread": ("Sourdough", "Starter Culture"),
}
CHILDREN: dict[str, dict[str, tuple[str, ...]]] = {
    "science": {
        "curies": ("Marie Curie", "Pierre Curie", "Polonium"),
        "sorbonne": ("Sorbonne", "Paris"),
    },
}
REPORT_TEXT: dict[str, tuple[str, str, float]] = {
    "science": ("The Curies and the Sorbonne", "Marie Curie, born in Warsaw, discovered "
                "polonium with Pierre Curie, who taught at the Sorbonne in Paris.", 8.0),
    "poland": ("Warsaw, Poland and the Vistula", "Warsaw is the capital of Poland; the "
               "Vistula, Poland's longest river, flows through it.", 6.0),
    "bread": ("Sourdough baking", "Sourdough bread is leavened by a starter culture of wild "
              "yeast and lactic acid bacteria.", 3.0),
    "curies": ("Marie and Pierre Curie", "Marie and Pierre Curie discovered polonium "
               "together.", 7.0),
    "sorbonne": ("The Sorbonne in Paris", "The Sorbonne is a historic university in Paris "
                 "where Pierre Curie taught.", 5.0),
}  # fmt: skip


def unit(doc: str) -> str:
    """Return the text-unit id (and document id) of fixture document ``doc``."""
    return f"tu-{doc}"


def ent(name: str) -> str:
    """Return the entity id of ``name`` (as a graph build derives it)."""
    return entity_id(name)


def rel_id(source: str, target: str) -> str:
    """Return the fixture's relationship id between two entity names."""
    return f"r-{ent(source)[:8]}-{ent(target)[:8]}"


@dataclass
class GraphFixture:
    """The fixture's app and the ids a test asserts on.

    Attributes:
        app: the built app (SQLite stores in the test's directory, the real embedder).
        community_ids: fixture community name (``science``, ``curies`` ...) -> community id.
    """

    app: App
    community_ids: dict[str, str]

    def chain(self, chat_model: ChatModel | None = None, **query: Any) -> RAGChain:
        """Return a chain over the fixture index (``query``: `QueryConfig` fields)."""
        config = QueryConfig.model_validate({**self.app.config.query.model_dump(), **query})
        return RAGChain(
            self.app.index(),
            embedder=self.app.embedder,
            chat_model=chat_model,
            budget_tokenizer=self.app.budget_tokenizer,
            config=config,
        )


def _items() -> tuple[GraphItems, dict[str, str]]:
    entities = [
        Entity(id=ent(n), name=n, type=t, description=d, text_unit_ids=tuple(unit(x) for x in ds),
               rank=sum(n in (r[0], r[1]) for r in RELATIONSHIPS))
        for n, t, d, ds in ENTITIES
    ]  # fmt: skip
    relationships = [
        Relationship(id=rel_id(s, t), source_id=ent(s), target_id=ent(t), type=ty,
                     description=d, weight=w, text_unit_ids=tuple(unit(x) for x in ds))
        for s, t, ty, d, w, ds in RELATIONSHIPS
    ]  # fmt: skip
    ids: dict[str, str] = {}
    communities: list[Community] = []
    for name, members in TOP.items():
        ids[name] = community_id(0, sorted(ent(m) for m in members))
        for child, child_members in CHILDREN.get(name, {}).items():
            ids[child] = community_id(1, sorted(ent(m) for m in child_members))
    for name, members in TOP.items():
        kids = CHILDREN.get(name, {})
        communities.append(Community(id=ids[name], level=0, member_ids=tuple(ent(m) for m in members),
                                     children_ids=tuple(ids[k] for k in kids)))  # fmt: skip
        for child, child_members in kids.items():
            communities.append(Community(id=ids[child], level=1, parent_id=ids[name],
                                         member_ids=tuple(ent(m) for m in child_members)))  # fmt: skip
    level = {c.id: c.level for c in communities}
    reports = []
    for name, (title, summary, rating) in REPORT_TEXT.items():
        cid = ids[name]
        members = {m for c in communities if c.id == cid for m in c.member_ids}
        units = sorted({u for e in entities if e.id in members for u in e.text_unit_ids})
        reports.append(CommunityReport(
            community_id=cid, title=title, summary=summary, rating=rating,
            full_content=f"# {title}\n\n{summary}", rank=rating, text_unit_ids=tuple(units),
            level=level[cid],
        ))  # fmt: skip
    items = GraphItems(entities=entities, relationships=relationships, communities=communities,
                       reports=reports)  # fmt: skip
    return items, ids


@asynccontextmanager
async def graph_app(
    project_dir: Path, config: UkrConfig | None = None
) -> AsyncIterator[GraphFixture]:
    """Build the fixture index in ``project_dir`` and yield it (the app is closed after)."""
    async with build_app(config or UkrConfig(), project_dir) as app:
        stores = app.index()
        records = [
            IndexRecord(id=unit(d), text=text,
                        fields={"document_id": unit(d), "path": f"{d}.txt", "title": d.title(),
                                "start_char": 0, "end_char": len(text), "chunk_index": 0})
            for d, text in DOCS.items()
        ]  # fmt: skip
        vectors = await app.embedder.embed_documents([r.text for r in records])
        await stores.search.bind_embedding(app.embedder.model_id, app.embedder.dimension)
        await stores.search.upsert(Collection.TEXT_UNITS, records, vectors)
        items, ids = _items()
        await GraphWriter(stores, app.embedder).write(items)
        await stores.records.put(
            INDEX_NAMESPACE, METHODOLOGIES_KEY, json.dumps(["graphrag", "lightrag"])
        )
        yield GraphFixture(app=app, community_ids=ids)


T = TypeVar("T")


def run_graph(project_dir: Path, body: Callable[[GraphFixture], Awaitable[T]]) -> T:
    """Build the fixture index in ``project_dir``, run ``body`` on it, return its result."""

    async def main() -> T:
        async with graph_app(project_dir) as fx:
            return await body(fx)

    return asyncio.run(main())
