"""Community reports: the prompt, the reply parser and the stored report (seed 000 §4.3).

The prompt shows a community's packed context (`domain.graph.report_context`, whose names are
re-exported here). The model replies with one JSON object (title, summary, rating, rating
explanation, findings), from which ``full_content``, the text that is embedded and searched,
is rendered with no second call.

Not here: calling the model and ordering communities bottom-up
(``ingestion.graph.reports``), clustering (`domain.graph.communities`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence

import regex
from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.graph.report_context import (
    ReportContext,
    build_report_context,
    entity_degrees,
)
from unified_kg_rag.domain.models import Community, CommunityReport, Message
from unified_kg_rag.domain.prompts.render import render_messages
from unified_kg_rag.domain.text.analysis import repair_unicode
from unified_kg_rag.util.errors import ModelOutputError

__all__ = [
    "REPORT_PROMPT",
    "ParsedReport",
    "ReportContext",
    "build_report_context",
    "community_report",
    "entity_degrees",
    "parse_report_reply",
    "render_report_messages",
]

logger = logging.getLogger(__name__)

REPORT_PROMPT = "community_report.v1"
"""Name of the packaged report prompt template (`PromptLibrary.get`; overridable)."""

_THINK_BLOCK = regex.compile(r"<think>.*?</think>", regex.DOTALL | regex.IGNORECASE)
_NUMBER = regex.compile(r"[-+]?\d+(?:\.\d+)?")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ParsedReport(_Model):
    """A report reply as the model wrote it, fields checked.

    Attributes:
        title: non-blank title.
        summary: executive summary ("" when missing).
        rating: importance 0-10, clamped (0 when missing or unreadable).
        rating_explanation: why that rating ("" when missing).
        findings: ``(summary, explanation)`` pairs in reply order.
    """

    title: str
    summary: str = ""
    rating: float = 0.0
    rating_explanation: str = ""
    findings: tuple[tuple[str, str], ...] = ()


def render_report_messages(
    community_name: str, context: ReportContext, *, template: str
) -> list[Message]:
    """Render the report prompt of one community.

    ``{community_name}`` and ``{context}`` are replaced in one pass, so braces in the
    context's text are never read as placeholders.

    Args:
        community_name: the community's display name.
        context: the packed context (`build_report_context`).
        template: the template in effect (``REPORT_PROMPT`` or its override); ``=== user ===``
            splits the system part from the user part; without it the whole template is one
            user message.

    Returns:
        ``[system, user]`` messages, or ``[user]`` when the template has no system part.
    """
    return render_messages(
        template, {"community_name": community_name, "context": context.text}
    )


def parse_report_reply(reply: str) -> ParsedReport:
    """Read a report reply: the JSON object the report prompt asks for.

    Tolerated: ``<think>`` blocks or a lone ``</think>`` before the answer, code fences,
    prose before or after the object, key case (``"Title"``), a rating given as a string
    (``"7.5"``, ``"8/10"``), findings given as plain strings. When several objects carry a
    title, the last one wins (a model that corrects itself). Trailing commas are not
    tolerated (the object is then unreadable). A ``\ud800``-style escape of a lone surrogate
    in a string reads as U+FFFD (the text must stay storable), and a rating too large for a
    float reads as 10.

    Args:
        reply: the model's reply text.

    Returns:
        The report; ``rating`` clamped to 0-10.

    Raises:
        ModelOutputError: no JSON object with a non-blank string ``title``.
    """
    text = _strip_reasoning(reply)
    obj = _last_titled_object(text)
    if obj is None:
        raise ModelOutputError(
            "report reply has no JSON object with a title"
            + (f": {' '.join(text.split())[:120]!r}" if text.strip() else " (empty reply)")
        )
    findings: list[tuple[str, str]] = []
    raw_findings = obj.get("findings")
    for item in raw_findings if isinstance(raw_findings, list) else ():
        if isinstance(item, dict):
            lower = {str(k).lower(): v for k, v in item.items()}
            pair = (_text(lower.get("summary")), _text(lower.get("explanation")))
        else:
            pair = (_text(item), "")
        if pair[0] or pair[1]:
            findings.append(pair)
    return ParsedReport(
        title=_text(obj["title"]),
        summary=_text(obj.get("summary")),
        rating=_rating(obj.get("rating")),
        rating_explanation=_text(obj.get("rating_explanation")),
        findings=tuple(findings),
    )


def _strip_reasoning(reply: str) -> str:
    text = _THINK_BLOCK.sub("", reply)
    lower = text.lower()
    close = lower.rfind("</think>")
    if close >= 0:
        text = text[close + len("</think>") :]
    opened = text.lower().find("<think>")
    return text[:opened] if opened >= 0 else text


def _last_titled_object(text: str) -> dict[str, object] | None:
    """Return the last top-level JSON object in ``text`` with a non-blank string title.

    Keys are lower-cased. Objects nested in a decoded object are not considered.
    """
    decoder = json.JSONDecoder()
    found: dict[str, object] | None = None
    pos = text.find("{")
    while pos >= 0:
        try:
            value, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            lower = {str(k).lower(): v for k, v in value.items()}
            title = lower.get("title")
            if isinstance(title, str) and title.strip():
                found = lower
        pos = text.find("{", end)
    return found


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return repair_unicode(value).strip()
    if isinstance(value, list):
        return " ".join(_text(v) for v in value).strip()
    return str(value).strip()


def _rating(value: object) -> float:
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, int):
        number = float(min(max(value, 0), 10))  # an integer too large for a float
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str) and (m := _NUMBER.search(value)) is not None:
        number = float(m.group())
    else:
        return 0.0
    return min(max(number, 0.0), 10.0) if math.isfinite(number) else 0.0


def community_report(
    community: Community,
    parsed: ParsedReport,
    *,
    rank: float,
    text_unit_ids: Sequence[str],
) -> CommunityReport:
    """Build the stored report of ``community`` from its parsed reply.

    ``full_content`` (what is embedded and searched) is Markdown: ``# title``, the summary, a
    ``Rating: r/10`` line with its explanation, then one ``## finding`` heading per finding
    followed by its explanation. `CommunityReport.findings` holds ``"summary: explanation"``
    strings (just the summary when there is no explanation).

    Args:
        community: the community reported on.
        parsed: the parsed reply (`parse_report_reply`).
        rank: the sum of the members' document-backed degrees (seed 000 §4.3, "Report rank").
        text_unit_ids: the report's lineage (`ReportContext.text_unit_ids`).
    """
    parts = [f"# {parsed.title}"]
    if parsed.summary:
        parts.append(parsed.summary)
    rating_line = f"Rating: {parsed.rating:g}/10"
    if parsed.rating_explanation:
        rating_line += f". {parsed.rating_explanation}"
    parts.append(rating_line)
    for summary, explanation in parsed.findings:
        parts.append(f"## {' '.join(summary.split())}" if summary else "## Finding")
        if explanation:
            parts.append(explanation)
    return CommunityReport(
        community_id=community.id,
        level=community.level,
        title=parsed.title,
        summary=parsed.summary,
        rating=parsed.rating,
        rating_explanation=parsed.rating_explanation,
        findings=tuple(f"{s}: {e}" if s and e else s or e for s, e in parsed.findings),
        full_content="\n\n".join(parts),
        rank=rank,
        text_unit_ids=tuple(sorted(set(text_unit_ids))),
    )
