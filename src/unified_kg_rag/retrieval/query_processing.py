"""Query processing: the question's entities (GraphRAG local) and dual-level keywords (LightRAG).

With an LLM (and ``query.llm_query_processing`` on), one short JSON call each; without one, or
when the reply cannot be read, the fallback of seed 000 §6.2: the raw question is the low-level
(and high-level) keywords, and the query entities are the indexed entity names the question
contains. The fallback is recorded in the query's metadata (``query_processing``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from unified_kg_rag.domain.llm.json_reply import parse_json_object
from unified_kg_rag.domain.models import Collection, Message, SearchMode
from unified_kg_rag.retrieval.strategies.base import QueryContext, is_fatal

__all__ = [
    "QueryKeywords",
    "entity_names_in",
    "extract_keywords",
    "extract_query_entities",
    "parse_json_object",
]

logger = logging.getLogger(__name__)

_MAX_ITEMS = 12
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class QueryKeywords:
    """LightRAG's dual-level keywords of a question.

    Attributes:
        high: broad themes, searched in the relationships index.
        low: specific names and terms, searched in the entities index.
        source: ``llm`` or ``fallback``.
    """

    high: tuple[str, ...]
    low: tuple[str, ...]
    source: str = "fallback"


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    out: list[str] = []
    for v in value:
        if isinstance(v, str) and v.strip() and v.strip() not in out:
            out.append(v.strip())
    return tuple(out[:_MAX_ITEMS])


def _note(ctx: QueryContext, what: str, how: str) -> None:
    notes = ctx.metadata.setdefault("query_processing", {})
    assert isinstance(notes, dict)
    notes[what] = how


async def _ask_json(ctx: QueryContext, prompt: str) -> dict[str, object] | None:
    chat = ctx.model("query")
    assert chat is not None
    try:
        reply = await chat.complete(
            [Message(role="user", content=prompt)], max_tokens=300, temperature=0.0
        )
    except Exception as exc:
        if is_fatal(exc):
            raise
        logger.warning("query processing call failed, using the fallback: %s", exc)
        return None
    finally:
        ctx.count_llm_call()
    return parse_json_object(reply.text)


def _use_llm(ctx: QueryContext) -> bool:
    return ctx.model("query") is not None and ctx.config.llm_query_processing


async def extract_keywords(ctx: QueryContext) -> QueryKeywords:
    """Return the question's high- and low-level keywords.

    Raises:
        ModelError: only an authentication failure (401/403) of the LLM; other failures
            fall back to the raw question.
    """
    if _use_llm(ctx):
        data = await _ask_json(
            ctx, ctx.prompts.text("query_keywords.v1", {"question": ctx.question})
        )
        if data is not None:
            high = _strings(data.get("high_level_keywords"))
            low = _strings(data.get("low_level_keywords"))
            if high or low:
                _note(ctx, "keywords", "llm")
                return QueryKeywords(high or low, low or high, "llm")
        _note(ctx, "keywords", "fallback: the model's reply held no keywords")
    else:
        _note(ctx, "keywords", "fallback: no LLM, the question is the keywords")
    return QueryKeywords((ctx.question,), (ctx.question,), "fallback")


def entity_names_in(question: str, names: list[str]) -> list[str]:
    """Return the ``names`` that occur in ``question`` as whole words (casefolded), longest first.

    A name inside a longer matched name is dropped (``Paris`` inside ``Paris Hilton``).
    """
    q = _padded_words(question)
    found: list[str] = []
    for name in sorted(set(names), key=lambda n: (-len(n), n)):
        words = _padded_words(name)
        if not words.strip() or words not in q:
            continue
        if any(words in _padded_words(f) for f in found):
            continue
        found.append(name)
    return found


def _padded_words(text: str) -> str:
    return " " + " ".join(_WORD.findall(text.casefold())) + " "


async def extract_query_entities(ctx: QueryContext) -> list[str]:
    """Return the entity names the question mentions.

    Raises:
        StoreError: the entities index failed (fallback path).
        ModelError: only an authentication failure of the LLM.
    """
    if _use_llm(ctx):
        data = await _ask_json(
            ctx, ctx.prompts.text("query_entities.v1", {"question": ctx.question})
        )
        names = list(_strings(data.get("entities"))) if data is not None else []
        if names:
            _note(ctx, "entities", "llm")
            return names
        _note(ctx, "entities", "fallback: the model's reply held no entities")
    hits = await ctx.stores.search.search(
        Collection.ENTITIES, query_text=ctx.question, mode=SearchMode.LEXICAL, k=50
    )
    names = [str(h.fields["name"]) for h in hits if isinstance(h.fields.get("name"), str)]
    found = entity_names_in(ctx.question, names)
    if not _use_llm(ctx):
        _note(ctx, "entities", "fallback: no LLM, entity names found in the question")
    return found or [ctx.question]
