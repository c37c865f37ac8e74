"""Strategy ``iterative``: a base strategy, then bridge follow-up rounds for multi-hop questions.

Round 0 finds the passage that *names* a multi-hop question's bridge entity more often than
the passage *about* it (seed 000 §6.3: the later hop's passage is the one missing). This
strategy wraps ``query.iterative.base`` (`local`, `mix` or `ppr`, built through the strategy
registry, no dispatch on it) and adds follow-up rounds:

1. **Round 0** is the base's own search, unchanged. When no follow-up round runs (the
   controller calls it sufficient, or there is nothing to follow), its result is returned as
   it is.
2. **Control** (`iterative_control`): with an LLM one verdict call per round (sufficient,
   bridge entities, next queries); without one, bridge terms from the last round's top
   passages (entity names or `lazy` concepts the question does not hold), and the next
   queries are ``question + bridge`` for the best ``max_next_queries`` of them.
3. **Follow-up round**: the base reruns seeded with the bridges (its context copy carries
   them as query entities for `local`, low-level keywords for `mix`, and in the search text
   ``question + bridges`` that `ppr` seeds from), and each next query searches the text
   units (`naive`, ``round_top_k``). A query or bridge already searched (case-folded) is not
   searched again; nothing new stops the rounds.
4. **Fusion**: one bucket per round, fused by the chain with weighted RRF:
   ``iterative_round_0`` (weight ``first_round_weight``, so round 0's top stays on top),
   ``iterative_round_<n>`` (the rerun, 1) and ``iterative_round_<n>_text`` (the text searches
   interleaved, ``text_weight``). Every candidate keeps its provenance and gets metadata
   ``round`` (the first round that found it).

Bounds: ``max_rounds`` follow-up rounds; no new round (or verdict call) once the query's
deadline has passed (``stop_reason: deadline``; the rounds done are used). An unreadable
controller reply stops the rounds (``controller_unparsed``); a non-fatal model error too
(``degraded``, noted under ``metadata["degraded"]``); a fatal one fails the query.
``metadata["iterative"]`` = ``{base, rounds, stop_reason, verdicts, searched,
context_sufficient}``; ``context_sufficient`` is False only after an insufficient verdict no
further round could follow, None otherwise.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from unified_kg_rag.config.models import QueryConfig
from unified_kg_rag.retrieval.query_processing import QueryKeywords
from unified_kg_rag.retrieval.strategies.base import (
    STRATEGIES,
    Bucket,
    Candidate,
    QueryContext,
    StrategyResult,
    fuse,
    is_fatal,
    register_strategy,
)
from unified_kg_rag.retrieval.strategies.iterative_control import (
    Plan,
    llm_decompose,
    llm_verdict,
    offline_bridges,
)
from unified_kg_rag.retrieval.strategies.naive import NaiveStrategy

__all__ = ["IterativeStrategy", "base_of"]

logger = logging.getLogger(__name__)

_REFERENCE = re.compile(r"#(\d+)")


def base_of(config: QueryConfig) -> str:
    """Return the strategy `iterative` wraps under ``config`` (``query.iterative.base``)."""
    return config.iterative.base


@dataclass
class _Run:
    """What the rounds did so far."""

    buckets: list[Bucket] = field(default_factory=list)
    searched: list[str] = field(default_factory=list)
    verdicts: list[dict[str, object]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    rounds: int = 0
    stop_reason: str = "max_rounds"
    context_sufficient: bool | None = None

    def new(self, terms: Sequence[str]) -> list[str]:
        """Return the terms not searched yet (case-folded, each once)."""
        out: list[str] = []
        for t in terms:
            key = t.casefold().strip()
            if key and key not in self.seen:
                self.seen.add(key)
                out.append(t)
        return out


def _tag(candidates: Sequence[Candidate], round_no: int) -> list[Candidate]:
    return [dataclasses.replace(c, metadata={**c.metadata, "round": round_no})
            for c in candidates]  # fmt: skip


def _interleave(lists: Sequence[Sequence[Candidate]]) -> list[Candidate]:
    out: list[Candidate] = []
    keys: set[tuple[str, str]] = set()
    for i in range(max((len(x) for x in lists), default=0)):
        for x in lists:
            if i < len(x) and (x[i].kind, x[i].id) not in keys:
                keys.add((x[i].kind, x[i].id))
                out.append(x[i])
    return out


def _as_result(raw: list[Candidate] | StrategyResult, name: str) -> StrategyResult:
    return raw if isinstance(raw, StrategyResult) else StrategyResult(
        buckets=[Bucket(name, list(raw))]
    )


@register_strategy(
    "iterative",
    methodology=None,
    wraps=base_of,
    description="Multi-hop: the base strategy (`query.iterative.base`: local, mix or ppr), "
    "then follow-up rounds on the bridge entities its passages name, fused by RRF.",
)
class IterativeStrategy:
    """Bridge follow-up rounds around a base strategy (see the module docstring)."""

    async def retrieve(self, ctx: QueryContext) -> StrategyResult:
        """Return round 0's result alone, or every round's candidates as buckets to fuse.

        Raises:
            StoreError: a store failed.
            EmbeddingModelError: a query could not be embedded.
            ModelError: the controller model denied access (HTTP 401/403).
        """
        cfg = ctx.config.iterative
        base = STRATEGIES.get(cfg.base)
        first = _as_result(await base.factory().retrieve(ctx), base.name)
        ranked = _tag(fuse(first.buckets, ctx.config.rrf_k), 0)
        run = _Run()
        run.new([ctx.question])
        if cfg.decompose and ctx.model("query") is not None:
            await self._steps(ctx, run)
        else:
            await self._controlled(ctx, run, ranked)
        ctx.metadata["iterative"] = {
            "base": base.name, "rounds": run.rounds, "stop_reason": run.stop_reason,
            "verdicts": run.verdicts, "searched": run.searched,
            "context_sufficient": run.context_sufficient,
        }  # fmt: skip
        if not run.buckets:
            for b in first.buckets:
                b.candidates = _tag(b.candidates, 0)
            return first
        buckets = [Bucket("iterative_round_0", ranked, cfg.first_round_weight), *run.buckets]
        return StrategyResult(
            buckets=buckets, synthesized=first.synthesized, answer_style=first.answer_style,
            cannot_answer=None, pinned=first.pinned,
        )  # fmt: skip

    async def _controlled(self, ctx: QueryContext, run: _Run, ranked: list[Candidate]) -> None:
        """Run follow-up rounds as the controller (LLM or offline) decides."""
        cfg = ctx.config.iterative
        latest, everything = ranked, list(ranked)
        known = {(c.kind, c.id) for c in ranked}
        for round_no in range(1, cfg.max_rounds + 2):
            if ctx.out_of_time:
                run.stop_reason = "deadline"
                break
            judged = ctx.model("query") is not None
            if not judged and round_no > cfg.max_rounds:
                break  # offline there is no verdict on the last round
            plan = await self._plan(ctx, run, latest, everything)
            if plan is None:
                break
            if plan.sufficient:
                run.stop_reason = "sufficient"
                break
            if round_no > cfg.max_rounds:
                run.context_sufficient = False if judged else None
                break
            bridges = run.new(plan.bridges)
            queries = run.new(plan.queries)
            if not bridges and not queries:
                run.stop_reason = "nothing_new"
                run.context_sufficient = False if judged else None
                break
            if ctx.out_of_time:
                run.stop_reason = "deadline"
                run.context_sufficient = False if judged else None
                break
            found = await self._round(ctx, round_no, bridges, queries, run)
            latest = [c for c in found if (c.kind, c.id) not in known]
            known.update((c.kind, c.id) for c in found)
            everything.extend(latest)

    async def _steps(self, ctx: QueryContext, run: _Run) -> None:
        """Run one follow-up round per step of the question's decomposition (``decompose``).

        Each step's ``#n`` references are replaced by step n's answer, read LLM-free: the
        best bridge term (`offline_bridges`) of step n's passages not in step n's text, else
        step n's text. The answers seed the step's base rerun as its bridges; the resolved
        step is its text search.
        """
        try:
            steps = await llm_decompose(ctx)
        except Exception as exc:
            if is_fatal(exc):
                raise
            self._degrade(ctx, "iterative_decomposition", exc)
            run.stop_reason = "degraded"
            return
        if not steps:
            run.stop_reason = "decomposition_unparsed"
            return
        answers: dict[int, str] = {}
        run.stop_reason = "steps_done"
        for round_no, step in enumerate(steps, start=1):
            if ctx.out_of_time:
                run.stop_reason = "deadline"
                return
            refs = [int(n) for n in _REFERENCE.findall(step)]
            bridges = run.new([answers[n] for n in refs if n in answers])
            resolved = _REFERENCE.sub(lambda m: answers.get(int(m.group(1)), m.group(0)), step)
            queries = run.new([resolved])
            found = await self._round(ctx, round_no, bridges, queries, run)
            passages = [c for c in found if c.kind == "text_unit"]
            step_ctx = dataclasses.replace(ctx, question=resolved)
            terms = await offline_bridges(step_ctx, passages, ())
            answers[round_no] = terms[0] if terms else resolved
            run.verdicts.append({"step": step, "resolved": resolved,
                                 "answer": terms[0] if terms else None})  # fmt: skip
        run.context_sufficient = None

    @staticmethod
    def _degrade(ctx: QueryContext, name: str, exc: Exception) -> None:
        logger.warning("%s call failed, stopping the rounds: %s", name, exc)
        degraded = ctx.metadata.setdefault("degraded", {})
        if isinstance(degraded, dict):
            degraded[name] = f"{type(exc).__name__}: {exc}"

    async def _plan(
        self, ctx: QueryContext, run: _Run, latest: list[Candidate], everything: list[Candidate]
    ) -> Plan | None:
        """Return the next round's plan; None stops the rounds (the reason set on ``run``)."""
        cfg = ctx.config.iterative
        if ctx.model("query") is None:
            passages = [c for c in latest if c.kind == "text_unit"]
            bridges = await offline_bridges(ctx, passages, run.searched)
            form = "{b}" if cfg.followup_query == "bridge" else "{q} {b}"
            queries = tuple(form.format(q=ctx.question, b=b)
                            for b in bridges[: cfg.max_next_queries])  # fmt: skip
            run.verdicts.append({"bridge_entities": list(bridges)})
            return Plan(None, bridges, queries)
        try:
            plan = await llm_verdict(ctx, everything, run.searched)
        except Exception as exc:
            if is_fatal(exc):
                raise
            self._degrade(ctx, "iterative_controller", exc)
            run.stop_reason = "degraded"
            return None
        if plan is None:
            run.stop_reason = "controller_unparsed"
            return None
        run.verdicts.append({
            "sufficient": plan.sufficient, "bridge_entities": list(plan.bridges),
            "next_queries": list(plan.queries),
        })  # fmt: skip
        return plan

    async def _round(
        self, ctx: QueryContext, round_no: int, bridges: list[str], queries: list[str],
        run: _Run,
    ) -> list[Candidate]:  # fmt: skip
        """Run follow-up round ``round_no``; add its buckets to ``run``; return what it found."""
        cfg = ctx.config.iterative
        run.rounds = round_no
        run.searched.extend([*bridges, *queries])
        text_cfg = ctx.config.model_copy(update={"top_k": cfg.round_top_k})

        async def rerun() -> list[Candidate]:
            if not bridges or not cfg.rerun_base:
                return []
            kw = ctx._keywords  # round 0's high-level keywords, when its base read them
            search = f"{ctx.question} {' '.join(bridges)}"
            if cfg.rerun_query == "first_query":
                search = queries[0] if queries else " ".join(bridges)
            sub = self._sub(ctx, search, ctx.config)
            sub._entities = list(bridges)
            sub._keywords = QueryKeywords(kw.high if kw else tuple(bridges), tuple(bridges),
                                          "iterative")  # fmt: skip
            base = STRATEGIES.get(cfg.base)
            result = _as_result(await base.factory().retrieve(sub), base.name)
            self._merge(ctx, sub, round_no)
            return fuse(result.buckets, ctx.config.rrf_k)

        async def text(query: str) -> list[Candidate]:
            return list(await NaiveStrategy().retrieve(self._sub(ctx, query, text_cfg)))

        def search(query: str) -> Callable[[], Awaitable[list[Candidate]]]:
            return lambda: text(query)

        none: list[Candidate] = []
        found = await asyncio.gather(
            ctx.section(f"iterative_round_{round_no}", rerun, none),
            *(ctx.section(f"iterative_round_{round_no}_text", search(q), none) for q in queries),
        )
        base_list = _tag(found[0], round_no)
        text_list = _tag(_interleave(found[1:]), round_no)
        if base_list:
            run.buckets.append(Bucket(f"iterative_round_{round_no}", base_list, 1.0))
        if text_list:
            run.buckets.append(Bucket(f"iterative_round_{round_no}_text", text_list,
                                      cfg.text_weight))  # fmt: skip
        return _interleave([text_list, base_list])

    @staticmethod
    def _sub(ctx: QueryContext, question: str, config: QueryConfig) -> QueryContext:
        """Return a copy of ``ctx`` searching ``question`` (own metadata, vector and caches)."""
        return dataclasses.replace(
            ctx, question=question, config=config, metadata={}, _query_vector=None,
            _vector_lock=asyncio.Lock(), _keywords=None, _entities=None,
        )  # fmt: skip

    @staticmethod
    def _merge(ctx: QueryContext, sub: QueryContext, round_no: int) -> None:
        """Carry a rerun's model calls and degraded sections into the query's metadata."""
        calls = sub.metadata.get("llm_calls")
        if isinstance(calls, int) and calls:
            ctx.count_llm_call(calls)
        degraded = sub.metadata.get("degraded")
        if isinstance(degraded, dict) and degraded:
            into = ctx.metadata.setdefault("degraded", {})
            if isinstance(into, dict):
                into.update({f"iterative_round_{round_no}.{k}": v for k, v in degraded.items()})
