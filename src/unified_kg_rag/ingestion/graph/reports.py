"""Community reports, written bottom-up (seed 000 §4.3 "Reports", "Sub-community roll-up").

The deepest level is reported first, so a parent whose own context was cut can add its
children's summaries. One call per community; the reply is a structured JSON report
(`domain.graph.reports.parse_report_reply`). A report that fails (unreadable reply, a reply
the provider cut, rejected request, a call that keeps failing while others are answered) is
left out and counted: the build is then not recorded as current, and the next run asks again
(the reports that succeeded come back from the LLM response cache). When the server is down
the stage stops (`ingestion.graph.failures.FailureJudge`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from unified_kg_rag.config.graph import ReportsConfig
from unified_kg_rag.domain.graph.claims import Claim
from unified_kg_rag.domain.graph.reports import (
    build_report_context,
    community_report,
    parse_report_reply,
    render_report_messages,
)
from unified_kg_rag.domain.llm.cache_control import accept_replies
from unified_kg_rag.domain.llm.finish import describe_finish
from unified_kg_rag.domain.llm.usage import spend_note
from unified_kg_rag.domain.models import Community, CommunityReport, Entity, Relationship
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ports import ChatModel, ProgressReporter, TokenCounter
from unified_kg_rag.util.aio import map_bounded
from unified_kg_rag.util.errors import ModelOutputError

from .extract import parses
from .failures import FailureJudge, read_reply

__all__ = ["ReportWriter", "ReportsOutcome", "community_name"]

logger = logging.getLogger(__name__)


def community_name(community: Community) -> str:
    """Return the display name of a community (``Level 0 Community 1a2b3c4d``).

    Derived from its content id, so adding a community elsewhere renames nothing.
    """
    return f"Level {community.level} Community {community.id[:8]}"


@dataclass
class ReportsOutcome:
    """Reports written, and the ids of communities whose report failed."""

    reports: list[CommunityReport]
    failed: list[str]


class ReportWriter:
    """Writes one report per community with the LLM, deepest level first.

    Args:
        chat: the wrapped chat model.
        counter: token counter the context budget is measured with.
        config: ``graph.reports``.
        template: the report prompt template.
        concurrency: communities in flight at once.
    """

    def __init__(
        self,
        chat: ChatModel,
        counter: TokenCounter,
        config: ReportsConfig,
        *,
        template: str,
        concurrency: int,
    ) -> None:
        self._chat = chat
        self._counter = counter
        self._config = config
        self._template = template
        self._concurrency = concurrency

    async def run(
        self,
        communities: Sequence[Community],
        entities: Mapping[str, Entity],
        relationships: Sequence[Relationship],
        *,
        progress: ProgressReporter | None = None,
        existing: Mapping[str, CommunityReport] | None = None,
        claims: Mapping[str, Sequence[Claim]] | None = None,
    ) -> ReportsOutcome:
        """Report every community; a failed one is listed in ``failed``.

        Args:
            communities: the communities to report (deepest level first).
            entities: every entity of the graph, by id.
            relationships: every relationship of the graph.
            progress: receives ``reports`` progress.
            existing: reports kept from the previous build (a delta run), by community id:
                the roll-up of a parent reported here reads its kept children's from them.
                They are not part of the outcome.
            claims: subject entity id → its claims (claim extraction on): each context gets
                a claims table of its shown entities' claims.

        Raises:
            ModelError: a failure that is not the community's own (authentication, server
                down); reports already answered are in the response cache for the next run.
        """
        progress = progress or NULL_PROGRESS
        by_member: dict[str, list[Relationship]] = {}
        for rel in relationships:
            by_member.setdefault(rel.source_id, []).append(rel)
            by_member.setdefault(rel.target_id, []).append(rel)
        done: dict[str, CommunityReport] = dict(existing or {})
        asked = {c.id for c in communities}
        failed: list[str] = []
        judge = FailureJudge(self._chat, concurrency=self._concurrency, stage="report")
        progress.start("reports", len(communities))
        for level in sorted({c.level for c in communities}, reverse=True):
            level_communities = sorted(
                (c for c in communities if c.level == level), key=lambda c: c.id
            )

            async def one(community: Community) -> CommunityReport:
                judge.check()
                try:
                    report = await self._report(community, entities, by_member, done, claims)
                except Exception as exc:
                    reason = await judge.judge(exc)
                    logger.warning("report of %s failed: %s", community_name(community), reason)
                    raise
                finally:
                    progress.advance("reports", note=spend_note())
                judge.answered()
                return report

            results = await map_bounded(level_communities, one, concurrency=self._concurrency)
            judge.raise_if_stopped()
            for result in results:
                if result.value is not None:
                    done[result.item.id] = result.value
                else:
                    failed.append(result.item.id)
        progress.finish("reports")
        return ReportsOutcome(
            sorted((r for r in done.values() if r.community_id in asked),
                   key=lambda r: r.community_id),
            failed,
        )

    async def _report(
        self,
        community: Community,
        entities: Mapping[str, Entity],
        by_member: Mapping[str, Sequence[Relationship]],
        done: Mapping[str, CommunityReport],
        claims: Mapping[str, Sequence[Claim]] | None = None,
    ) -> CommunityReport:
        members = set(community.member_ids)
        inside = {
            rel.id: rel
            for m in community.member_ids
            for rel in by_member.get(m, ())
            if rel.source_id in members and rel.target_id in members
        }
        # children_ids are ordered biggest child first (domain.graph.communities)
        children = [done[c] for c in community.children_ids if c in done]
        context = build_report_context(
            community,
            entities,
            sorted(inside.values(), key=lambda r: r.id),
            max_tokens=self._config.max_context_tokens,
            count=self._counter.count,
            sub_reports=children,
            max_entities=self._config.max_entities,
            claims=claims,
        )
        with accept_replies(parses(parse_report_reply)):  # a broken report is asked again next run
            reply = await self._chat.complete(
                render_report_messages(
                    community_name(community), context, template=self._template
                ),
                max_tokens=self._config.max_reply_tokens,
            )
        if not reply.complete:
            raise ModelOutputError(
                f"report reply {describe_finish(reply.finish_reason)}; asked again next run"
            )
        parsed = read_reply(parse_report_reply, reply.text, "report")
        rank = float(sum(entities[m].rank for m in community.member_ids if m in entities))
        return community_report(
            community, parsed, rank=rank, text_unit_ids=context.text_unit_ids
        )

