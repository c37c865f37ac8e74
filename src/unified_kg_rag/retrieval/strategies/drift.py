"""Strategy ``drift``: GraphRAG DRIFT search (seed 000 §6.1, ``drift_search.py`` upstream).

1. **Primer.** A hypothetical answer (HyDE) shaped like the highest-ranked of the reports
   nearest the question (``drift_hyde.v1``) is embedded and selects the ``k_followups``
   most similar reports, of every level; they are dealt round-robin into ``primer_folds``
   folds, one call each (``drift_primer.v1``): an intermediate answer, a 0-100 score and
   follow-up queries.
2. **Actions.** For ``n_depth`` rounds, the best-scored open follow-ups (at most
   ``followups_per_round``; a follow-up inherits the score of the answer that proposed it)
   each run `LocalStrategy` with the follow-up as the question and are answered from its
   context (``drift_followup.v1``): an answer, a score and new follow-ups. Without reports or
   primer follow-ups, the question itself is the one follow-up.
3. **Reduce.** One synthesized ``notes`` section (the intermediate answers, best score
   first), the primer's reports and each action's local candidates (fused) as buckets; the
   chain writes the final answer.

Model calls per query: at most ``1 + primer_folds + n_depth × followups_per_round``
(``metadata["llm_calls_bound"]``). The action searches make no call: they find their entities
by name, without the LLM. A failed call degrades only its own answer; a round whose actions
all failed ends the rounds, and so does the query's deadline (no round starts once it has
passed: the answers and buckets found so far are the result); a fatal error (store, 401/403)
fails the query and cancels the calls in flight. Without an LLM, one local search for the
question stands in.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from unified_kg_rag.domain.llm.json_reply import parse_json_object
from unified_kg_rag.domain.models import Collection, CommunityReport, Message, SearchMode
from unified_kg_rag.domain.ranking.budget import pack_typed
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.retrieval.strategies.base import (
    Bucket,
    Candidate,
    QueryContext,
    StrategyResult,
    fuse,
    register_strategy,
)
from unified_kg_rag.retrieval.strategies.filtering import reports_passing
from unified_kg_rag.retrieval.strategies.local import LocalStrategy, report_candidate
from unified_kg_rag.util.errors import ModelOutputError

__all__ = ["DriftStrategy", "IntermediateAnswer", "pack_context"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_TEMPLATE_TOKENS = 600
_MAX_FOLLOW_UPS = 5
_COUNTER = EstimateTokenCounter()
_NO_FOLLOW_UPS = "Without reports or primer follow-ups, the question itself is the one follow-up"
_HEADERS = {"report": "Reports", "entity": "Entities", "relationship": "Relationships",
            "claim": "Claims", "text_unit": "Passages"}  # fmt: skip


@dataclass(frozen=True)
class IntermediateAnswer:
    """One primer or action answer.

    Attributes:
        query: what was asked (the question for a primer fold, else the follow-up).
        answer: the model's answer.
        score: 0-100, how well it answers the question.
        follow_ups: the follow-up queries it proposed.
        stage: ``primer`` or ``action``.
    """

    query: str
    answer: str
    score: float
    follow_ups: tuple[str, ...]
    stage: str


def pack_context(
    candidates: Sequence[Candidate], shares: dict[str, float], max_tokens: int
) -> str:
    """Render fused candidates as a context of at most ``max_tokens`` (estimated) tokens.

    Each type fills its share of the budget (renormalized over the types present) in fused
    order; what a type leaves unused goes to the others, again in fused order.

    Args:
        candidates: best first, any kinds (``report``, ``entity``, ``relationship``,
            ``claim``, ``text_unit``).
        shares: type → share of the budget (``query.type_shares``).
        max_tokens: the budget.
    """
    groups: dict[str, list[Candidate]] = {}
    for c in candidates:
        if c.kind in _HEADERS:
            groups.setdefault(c.kind, []).append(c)
    packed = pack_typed({k: [c.text for c in v] for k, v in groups.items()}, shares,
                        max_tokens, _COUNTER)  # fmt: skip
    kept = {id(groups[k][p.index]) for k, ps in packed.items() for p in ps if not p.truncated}
    parts = []
    for kind, header in _HEADERS.items():
        items = [c for c in groups.get(kind, []) if id(c) in kept]
        if items:
            lines = "\n".join(f"[{i}] {c.text}" for i, c in enumerate(items, start=1))
            parts.append(f"-----{header}-----\n{lines}")
    return "\n\n".join(parts) or "(nothing found)"


async def _all(works: Sequence[Awaitable[T]]) -> list[T]:
    """Await concurrently; on the first exception, cancel the rest and raise it."""
    tasks = [asyncio.ensure_future(w) for w in works]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _parse(reply: str, query: str, stage: str) -> IntermediateAnswer:
    """Read a ``{"answer", "score", "follow_up_queries"}`` reply.

    Raises:
        ModelOutputError: no JSON object with an answer or follow-ups.
    """
    data = parse_json_object(reply)
    if data is None:
        raise ModelOutputError("the reply holds no JSON object")
    answer = data.get("answer")
    raw_score = data.get("score")
    try:
        score = float(raw_score) if isinstance(raw_score, int | float | str) else 0.0
    except ValueError:
        score = 0.0
    if not math.isfinite(score):  # "NaN", "inf": no usable score
        score = 0.0
    raw = data.get("follow_up_queries")
    follow_ups = [q.strip() for q in raw if isinstance(q, str) and q.strip()] if isinstance(
        raw, list) else []  # fmt: skip
    if not isinstance(answer, str) and not follow_ups:
        raise ModelOutputError("the reply has neither an answer nor follow-up queries")
    return IntermediateAnswer(
        query=query,
        answer=answer.strip() if isinstance(answer, str) else "",
        score=min(max(score, 0.0), 100.0),
        follow_ups=tuple(dict.fromkeys(follow_ups))[:_MAX_FOLLOW_UPS],
        stage=stage,
    )


@register_strategy(
    "drift",
    methodology="graphrag",
    description="GraphRAG DRIFT: a primer over the reports nearest a hypothetical answer, "
    "then rounds of follow-up local searches; needs an LLM (bounded number of calls).",
)
class DriftStrategy:
    """DRIFT search (see the module docstring)."""

    async def retrieve(self, ctx: QueryContext) -> StrategyResult:
        """Return the notes section and the primer's and actions' buckets.

        Raises:
            StoreError: a store failed.
            ModelError: the LLM refused access (401/403); other failures degrade.
            EmbeddingModelError: the question or the hypothetical answer could not be embedded.
        """
        cfg = ctx.config.drift_search
        bound = 1 + cfg.primer_folds + cfg.n_depth * cfg.followups_per_round
        ctx.metadata["llm_calls_bound"] = bound
        ctx.metadata.setdefault("llm_calls", 0)
        if ctx.model("query") is None:
            ctx.metadata["fallback"] = (
                "DRIFT needs an LLM (llm.kind is none); one local search stands in. "
                f"{_NO_FOLLOW_UPS}."
            )
            return await LocalStrategy().retrieve(ctx)
        sem = asyncio.Semaphore(cfg.max_concurrency)
        reports, answers = await self._primer(ctx, sem)
        buckets: list[Bucket] = []
        if reports:
            buckets.append(Bucket("drift_primer", [
                report_candidate(r, len(reports) - i) for i, r in enumerate(reports)
            ]))  # fmt: skip
        open_: list[tuple[float, int, str]] = []
        asked = {ctx.question.casefold()}

        def propose(a: IntermediateAnswer) -> None:
            for q in a.follow_ups:
                if q.casefold() not in asked:
                    asked.add(q.casefold())
                    open_.append((a.score, len(asked), q))

        for a in answers:
            propose(a)
        if not open_:  # the no-reports case said so already
            ctx.metadata.setdefault(
                "fallback", f"the primer proposed no follow-up. {_NO_FOLLOW_UPS}."
            )
            open_.append((0.0, 0, ctx.question))
        rounds = 0
        for depth in range(1, cfg.n_depth + 1):
            if ctx.out_of_time:
                ctx.metadata["drift_stopped"] = f"the query's deadline passed before round {depth}"
                break
            open_.sort(key=lambda t: (-t[0], t[1]))
            picked = open_[: cfg.followups_per_round]
            del open_[: cfg.followups_per_round]
            if not picked:
                break
            rounds = depth
            names = [f"drift.action.{depth}.{i}" for i in range(1, len(picked) + 1)]
            results = await _all([
                ctx.section(name, partial(self._action, ctx, q, name, sem), None)
                for name, (_, _, q) in zip(names, picked, strict=True)
            ])  # fmt: skip
            done = [r for r in results if r is not None]
            for answer, bucket in done:
                buckets.append(bucket)
                if answer is not None:
                    answers.append(answer)
                    propose(answer)
            if not any(answer is not None for answer, _ in done):
                ctx.metadata["drift_stopped"] = f"every action of round {depth} failed"
                break
        ctx.metadata["drift_rounds"] = rounds
        ctx.metadata["drift_answers"] = [
            f"{a.stage} [{a.score:g}] {a.query}" for a in answers
        ]
        return StrategyResult(buckets=buckets, synthesized=self._notes(answers))

    # ------------------------------------------------------------------ primer

    async def _primer(
        self, ctx: QueryContext, sem: asyncio.Semaphore
    ) -> tuple[list[CommunityReport], list[IntermediateAnswer]]:
        """Run the HyDE call and the primer folds; return the reports read and the answers."""
        cfg = ctx.config.drift_search
        near = await ctx.stores.search.search(
            Collection.REPORTS, query_vector=await ctx.query_vector(), mode=SearchMode.VECTOR,
            k=cfg.k_followups,
        )  # fmt: skip
        if not near:
            ctx.metadata["fallback"] = (
                f"the index holds no community reports. {_NO_FOLLOW_UPS}."
            )
            return [], []
        template = max(near, key=lambda h: _number(h.fields.get("rank"))).text
        hyde = await ctx.section("drift.hyde", partial(self._hyde, ctx, template), None)
        vector = await ctx.query_vector() if hyde is None else await ctx.embedder.embed_query(hyde)
        hits = near if hyde is None else await ctx.stores.search.search(
            Collection.REPORTS, query_vector=vector, mode=SearchMode.VECTOR, k=cfg.k_followups
        )  # fmt: skip
        reports = await ctx.stores.graph.get_reports([h.id for h in hits])
        if ctx.filters:
            allowed = await reports_passing(ctx, [r.community_id for r in reports])
            reports = [r for r in reports if r.community_id in allowed]
        ctx.metadata["drift_primer_reports"] = len(reports)
        folds = min(cfg.primer_folds, len(reports))
        results = await _all([
            ctx.section(f"drift.primer.{i + 1}",
                        partial(self._fold, ctx, reports[i::folds], sem, i + 1), None)
            for i in range(folds)
        ])  # fmt: skip
        return reports, [r for r in results if r is not None]

    async def _hyde(self, ctx: QueryContext, template: str) -> str:
        prompt = ctx.prompts.text("drift_hyde.v1", {
            "question": ctx.question, "template": _COUNTER.truncate(template, _TEMPLATE_TOKENS)
        })  # fmt: skip
        text = await self._ask(ctx, prompt)
        if not text.strip():
            raise ModelOutputError("the hypothetical answer is empty")
        return text.strip()

    async def _fold(
        self,
        ctx: QueryContext,
        reports: Sequence[CommunityReport],
        sem: asyncio.Semaphore,
        number: int,
    ) -> IntermediateAnswer:
        budget = ctx.config.drift_search.primer_context_tokens
        parts: list[str] = []
        for i, r in enumerate(reports, start=1):
            text = r.full_content or f"# {r.title}\n\n{r.summary}"
            part = f"Report {i}\n{_COUNTER.truncate(text, max(budget, 0))}"
            budget -= _COUNTER.count(part)
            parts.append(part)
            if budget <= 0:
                break
        prompt = ctx.prompts.text("drift_primer.v1", {
            "question": ctx.question, "reports": "\n\n".join(parts)
        })  # fmt: skip
        async with sem:
            reply = await self._ask(ctx, prompt, f"drift.primer.{number}")
            return _parse(reply, ctx.question, "primer")

    # ----------------------------------------------------------------- actions

    async def _action(
        self, ctx: QueryContext, followup: str, name: str, sem: asyncio.Semaphore
    ) -> tuple[IntermediateAnswer | None, Bucket]:
        """Run a local search for ``followup`` and answer it from that context.

        Returns:
            The answer (None when its call failed non-fatally), and the local search's
            candidates fused into one bucket ``name``, weighted 0.5-1.0 by the answer's score.
        """
        cfg = ctx.config.drift_search
        async with sem:
            sub = QueryContext(
                question=followup, stores=ctx.stores, embedder=ctx.embedder, chat_model=None,
                config=ctx.config, filters=ctx.filters, held=ctx.held,
                concept_graphs=ctx.concept_graphs, prompts=ctx.prompts,
            )  # fmt: skip
            try:
                result = await LocalStrategy().retrieve(sub)
            finally:
                self._merge_degraded(ctx, sub, name)
            candidates = fuse(result.buckets, ctx.config.rrf_k)
            shares = ctx.config.type_shares.model_dump()
            context = pack_context(candidates, shares, cfg.action_context_tokens)
            prompt = ctx.prompts.text("drift_followup.v1", {
                "question": ctx.question, "followup": followup, "context": context
            })  # fmt: skip

            async def answer_it() -> IntermediateAnswer:
                return _parse(await self._ask(ctx, prompt, f"{name}.answer"), followup, "action")

            # a failed answer leaves out only itself: the search's evidence still counts
            answer = await ctx.section(f"{name}.answer", answer_it, None)
        weight = 0.5 + (answer.score / 200 if answer is not None else 0.0)
        return answer, Bucket(name, candidates, weight)

    @staticmethod
    def _merge_degraded(ctx: QueryContext, sub: QueryContext, name: str) -> None:
        degraded = sub.metadata.get("degraded")
        if isinstance(degraded, dict) and degraded:
            mine = ctx.metadata.setdefault("degraded", {})
            if isinstance(mine, dict):
                for section, why in degraded.items():
                    mine[f"{name}.{section}"] = why

    async def _ask(self, ctx: QueryContext, prompt: str, step: str = "") -> str:
        """Return the reply to ``prompt``; a cut reply of ``step`` is recorded (note_reply)."""
        chat = ctx.model("query")
        assert chat is not None
        try:
            reply = await chat.complete(
                [Message(role="user", content=prompt)],
                max_tokens=ctx.config.drift_search.reply_max_tokens,
                temperature=0.0,
            )
        finally:
            ctx.count_llm_call()
        if step:
            ctx.note_reply(step, reply)
        return reply.text

    # ------------------------------------------------------------------ reduce

    @staticmethod
    def _notes(answers: Sequence[IntermediateAnswer]) -> list[Candidate]:
        """Return the one ``notes`` section: the intermediate answers, best score first."""
        ranked = sorted((a for a in answers if a.answer), key=lambda a: -a.score)
        if not ranked:
            return []
        text = "\n\n".join(f"[score {a.score:g}] {a.query}\n{a.answer}" for a in ranked)
        return [Candidate(
            kind="notes", id="drift:notes", text=text, score=ranked[0].score,
            metadata={"answers": len(ranked)},
        )]  # fmt: skip


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
