"""`ukr index --estimate`: the model calls and tokens a graph build will spend, before any call.

Exact for extraction (every text unit without a stored record is one call whose prompt is
rendered and counted). Gleaning is a range: at least one round per extracted unit (the round
that finds nothing missing ends it), at most ``max_gleaning_rounds``. Reports and description
summaries depend on the graph the model returns, so they are rough: one report per
``max_cluster_size / 2`` entities, with ``_ENTITIES_PER_UNIT`` entities per unit (measured on
MuSiQue with GPT-3.5: 9.7), each report prompt at its full context budget.

Each role (`domain.llm.roles`) is priced with its own model's prices (``llm.roles``): the
``extraction`` role carries extraction and gleaning, ``reports`` the community reports and
``summaries`` the summary tree's cluster summaries (description summaries are not counted:
how many descriptions need one depends on the graph the model returns). The total sums the
roles; its cost is known when every role that calls a model has both prices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, Field

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.extraction.claims import render_claim_messages
from unified_kg_rag.domain.extraction.format import (
    render_extraction_messages,
    render_gleaning_messages,
)
from unified_kg_rag.domain.extraction.records import ExtractionRecord
from unified_kg_rag.domain.llm.roles import ModelRole
from unified_kg_rag.ingestion.graph.claims import ClaimPlan
from unified_kg_rag.ingestion.units import UnitText
from unified_kg_rag.ports import TokenCounter

__all__ = ["CostEstimate", "RoleEstimate", "add_tree_cost", "estimate_graph_cost"]

_ENTITIES_PER_UNIT = 10
_REPLY_SHARE = 0.8  # extraction reply tokens per unit token (XML records restate the text)
_CLAIM_REPLY_SHARE = 0.3  # claim reply tokens per unit token (a few claims per passage)
_NAME_TOKENS = 6  # tokens of one listed entity name in the claim prompt (not known yet)


class RoleEstimate(BaseModel):
    """The calls, tokens and cost of one role (``*_max`` with every gleaning round).

    Attributes:
        model: the model serving the role, as configured (``openai:gpt-4o-mini``; the tier
            or ``inline`` in brackets when it is not the default model).
        calls_min: calls with one gleaning round per unit.
        calls_max: calls with every gleaning round.
        input_tokens_min: prompt tokens, one gleaning round per unit.
        input_tokens_max: prompt tokens, every gleaning round.
        output_tokens: reply tokens (estimated).
        input_price_per_1m: the role's model's price of a million prompt tokens, if set.
        output_price_per_1m: its price of a million reply tokens, if set.
        cost_min: ``(input_tokens_min * input price + output_tokens * output price) / 1e6``,
            when both prices are set.
        cost_max: as ``cost_min`` with ``input_tokens_max``.
    """

    model: str = ""
    calls_min: int = 0
    calls_max: int = 0
    input_tokens_min: int = 0
    input_tokens_max: int = 0
    output_tokens: int = 0
    input_price_per_1m: float | None = None
    output_price_per_1m: float | None = None
    cost_min: float | None = None
    cost_max: float | None = None

    def add(self, calls_min: int, calls_max: int, input_min: int, input_max: int,
            output: int) -> None:
        """Add calls and tokens to the role."""
        self.calls_min += calls_min
        self.calls_max += calls_max
        self.input_tokens_min += input_min
        self.input_tokens_max += input_max
        self.output_tokens += output


class CostEstimate(BaseModel):
    """Model calls and tokens a build would spend (``*_max`` with every gleaning round).

    Attributes:
        units: text units the graph covers.
        units_to_extract: units without a stored extraction record (each at least one call).
        calls_min: calls with one gleaning round per unit.
        calls_max: calls with every gleaning round.
        input_tokens_min: prompt tokens, one gleaning round per unit.
        input_tokens_max: prompt tokens, every gleaning round.
        output_tokens: reply tokens (estimated).
        reports: community reports expected (rough).
        tree_summaries: RAPTOR summary calls expected (``raptor`` with LLM summaries; rough:
            ``ceil(n / target_children)`` per level, reuse of a stored tree not counted).
        cost_min: the sum of the roles' costs, when every role that calls has both prices.
        cost_max: as ``cost_min`` with every gleaning round.
        claim_calls: claim calls (``graph.claims.enabled``; None and left out of the JSON
            when claims are off): units without a stored claim record.
        roles: the figures of each role that calls a model (``extraction``, ``reports``,
            ``summaries``), each priced with its own model; the totals above are their sums.
    """

    units: int = 0
    units_to_extract: int = 0
    calls_min: int = 0
    calls_max: int = 0
    input_tokens_min: int = 0
    input_tokens_max: int = 0
    output_tokens: int = 0
    reports: int = 0
    tree_summaries: int = 0
    cost_min: float | None = None
    cost_max: float | None = None
    claim_calls: int | None = Field(default=None, exclude_if=lambda v: v is None)
    roles: dict[str, RoleEstimate] = Field(default_factory=dict)

    def role(self, role: ModelRole, config: UkrConfig) -> RoleEstimate:
        """Return the figures of ``role`` (added, with its model's prices, on first use).

        Raises:
            ConfigurationError: the role names a tier that is not configured.
        """
        if role not in self.roles:
            source, choice = config.llm.serving(role)
            model = choice or config.llm
            label = model.label if source == "default" else f"{model.label} ({source})"
            self.roles[role] = RoleEstimate(
                model=label, input_price_per_1m=model.input_price_per_1m,
                output_price_per_1m=model.output_price_per_1m,
            )  # fmt: skip
        return self.roles[role]

    def add(self, role: ModelRole, config: UkrConfig, calls_min: int, calls_max: int,
            input_min: int, input_max: int, output: int) -> None:
        """Add calls and tokens to ``role`` and to the totals."""
        self.role(role, config).add(calls_min, calls_max, input_min, input_max, output)
        self.calls_min += calls_min
        self.calls_max += calls_max
        self.input_tokens_min += input_min
        self.input_tokens_max += input_max
        self.output_tokens += output


def _tokens(counter: TokenCounter, messages: Sequence[object]) -> int:
    return sum(counter.count(getattr(m, "content", "")) + 4 for m in messages)


def estimate_graph_cost(
    units: Sequence[UnitText],
    to_extract: Sequence[UnitText],
    *,
    config: UkrConfig,
    counter: TokenCounter,
    extraction_template: str,
    gleaning_template: str,
    reports_needed: bool,
    claims: ClaimPlan | None = None,
    entity_types: Sequence[str] | None = None,
    rebuild: bool = False,
) -> CostEstimate:
    """Return the estimate of a build over ``units`` that extracts ``to_extract``.

    Args:
        units: every text unit the graph will cover.
        to_extract: the units without a stored extraction record.
        config: the effective configuration.
        counter: the token counter prompts are measured with.
        extraction_template: the extraction prompt in effect.
        gleaning_template: the gleaning prompt in effect.
        reports_needed: True when ``graphrag`` is built (community reports).
        claims: the claim calls to make (`ingestion.graph.claims.claims_to_ask`), None
            when claims are off.
        entity_types: the types the prompts offer (an extraction schema's); None:
            ``graph.extraction.entity_types``.
        rebuild: the graph is built again though nothing is extracted (its settings,
            models or prompts changed): reports are counted as if every one were rewritten
            (an upper bound: a report whose context is unchanged is not asked again).
    """
    cfg = config.graph
    types = list(entity_types) if entity_types is not None else cfg.extraction.entity_types
    rounds = cfg.extraction.max_gleaning_rounds
    est = CostEstimate(units=len(units), units_to_extract=len(to_extract))
    empty = ExtractionRecord(fingerprint="")
    calls_min = calls_max = input_min = input_max = output = 0
    for unit in to_extract:
        prompt = _tokens(
            counter,
            render_extraction_messages(unit.text, entity_types=types, template=extraction_template),
        )
        reply = min(cfg.extraction.max_reply_tokens, int(counter.count(unit.text) * _REPLY_SHARE))
        glean = _tokens(
            counter,
            render_gleaning_messages(unit.text, empty, entity_types=types,
                                     template=gleaning_template),
        ) + reply
        input_min += prompt + (glean if rounds else 0)
        input_max += prompt + glean * rounds
        output += reply
        calls_min += 1 + (1 if rounds else 0)
        calls_max += 1 + rounds
    if to_extract:
        est.add("extraction", config, calls_min, calls_max, input_min, input_max, output)
    if reports_needed and (to_extract or rebuild):
        per_report = max(1, cfg.communities.max_cluster_size // 2)
        est.reports = math.ceil(len(units) * _ENTITIES_PER_UNIT / per_report)
        report_in = est.reports * cfg.reports.max_context_tokens
        est.add("reports", config, est.reports, est.reports, report_in, report_in,
                est.reports * cfg.reports.max_reply_tokens // 2)
    if claims is not None:
        _add_claims(est, claims, config=config, counter=counter)
    _price(est, config)
    return est


def _add_claims(
    est: CostEstimate, claims: ClaimPlan, *, config: UkrConfig, counter: TokenCounter
) -> None:
    """Add one claim call per unit (prompt rendered; names not known yet: estimated)."""
    cfg = config.graph.claims
    est.claim_calls = len(claims.units)
    for unit, names in claims.units:
        prompt = _tokens(counter, render_claim_messages(
            unit.text, names, template=claims.template, claim_description=cfg.description,
            claim_types=cfg.claim_types,
        )) + (0 if names else _ENTITIES_PER_UNIT * _NAME_TOKENS)  # fmt: skip
        reply = min(cfg.max_reply_tokens, int(counter.count(unit.text) * _CLAIM_REPLY_SHARE))
        est.add("extraction", config, 1, 1, prompt, prompt, reply)


def add_tree_cost(est: CostEstimate, units: Sequence[UnitText], *, config: UkrConfig,
                  counter: TokenCounter) -> CostEstimate:
    """Add the summary calls of a RAPTOR tree over ``units`` to ``est`` (seed 000 §6.5).

    Level 1 reads every unit once, in clusters of ``target_children``; each higher level
    reads the summaries below it, until a level holds ``min_nodes_to_cluster`` nodes or
    ``max_levels`` is reached. Each call's reply is counted at ``max_summary_tokens``.
    """
    cfg = config.graph.raptor
    n = len(units)
    if n < cfg.min_leaves:
        return est
    level_in = sum(counter.count(u.text) for u in units)
    calls = in_tokens = 0
    for level in range(1, cfg.max_levels + 1):
        if level > 1 and n <= cfg.min_nodes_to_cluster:
            break
        k = math.ceil(n / cfg.target_children)
        calls += k
        in_tokens += level_in + k * _TREE_PROMPT_TOKENS
        level_in, n = k * cfg.max_summary_tokens, k
        if k <= 1:
            break
    est.tree_summaries += calls
    est.add("summaries", config, calls, calls, in_tokens, in_tokens,
            calls * cfg.max_summary_tokens)
    _price(est, config)
    return est


_TREE_PROMPT_TOKENS = 180
"""Tokens of the cluster-summary prompt around the passages (``summarize_cluster.v1``)."""


def _price(est: CostEstimate, config: UkrConfig) -> None:
    """Price each role with its model's prices; the total when every role is priced.

    With no role calling (nothing to extract), the cost is 0 when the default model is
    priced, else unknown.
    """
    if not est.roles:
        priced = None not in (config.llm.input_price_per_1m, config.llm.output_price_per_1m)
        est.cost_min = est.cost_max = 0.0 if priced else None
        return
    for fig in est.roles.values():
        price_in, price_out = fig.input_price_per_1m, fig.output_price_per_1m
        if price_in is not None and price_out is not None:
            fig.cost_min = (fig.input_tokens_min * price_in + fig.output_tokens * price_out) / 1e6
            fig.cost_max = (fig.input_tokens_max * price_in + fig.output_tokens * price_out) / 1e6
    mins = [f.cost_min for f in est.roles.values()]
    maxes = [f.cost_max for f in est.roles.values()]
    priced = all(c is not None for c in [*mins, *maxes])
    est.cost_min = sum(c for c in mins if c is not None) if priced else None
    est.cost_max = sum(c for c in maxes if c is not None) if priced else None
