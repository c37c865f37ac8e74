"""Global search's pure steps: the hierarchy cut, map batches, map replies, key points.

GraphRAG global search (seed 000 §6.1.1) maps the community reports of one cut of the
hierarchy, in batches, to key points scored 0-100, and ranks the points for the answer.
This module holds the parts that need no I/O:

- `hierarchy_cut` / `choose_cut`: the cut at level ``L`` is every community at ``L`` plus the
  leaves that stop above it, so every entity is covered exactly once (MS GraphRAG's roll-up);
  `choose_cut` picks the cut that fits the report cap.
- `pack_batches` / `format_batch`: reports packed in order into token-bounded batches, each
  report shown under its 1-based ordinal in the batch.
- `DynamicWalk`: dynamic community selection's top-down walk over the ratings.
- `parse_map_reply` / `parse_rating`: lenient reading of the model's replies.
- `rank_points` / `pack_points`: threshold, rank and pack the key points into one section.

Not here: fetching reports, calling the model, concurrency
(``retrieval/strategies/global_search.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import regex

from unified_kg_rag.domain.llm.json_reply import parse_json_object
from unified_kg_rag.domain.models import Community

__all__ = [
    "CutChoice",
    "DynamicWalk",
    "KeyPoint",
    "RankedPoint",
    "choose_cut",
    "format_batch",
    "hierarchy_cut",
    "pack_batches",
    "pack_points",
    "parse_map_reply",
    "parse_rating",
    "rank_points",
    "report_header",
]

_THINK_BLOCK = regex.compile(r"<think>.*?</think>", regex.DOTALL | regex.IGNORECASE)
_NUMBER = regex.compile(r"[-+]?\d+(?:\.\d+)?")
_POINTS_HEADING = "Key points from the community reports, most important first:"


class _Counter(Protocol):
    """The token counter the packers need (`ports.TokenCounter`'s shape)."""

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


@dataclass(frozen=True)
class CutChoice:
    """The reports global search maps.

    Attributes:
        level: the level of the cut (0 = top).
        community_ids: the communities of the cut, in the order given.
        capped: the cut holds more than the cap, so only the most similar reports of it are
            mapped (no shallower cut fits).
    """

    level: int
    community_ids: tuple[str, ...]
    capped: bool = False


@dataclass(frozen=True)
class KeyPoint:
    """One key point of a map reply, as the model wrote it (validated).

    Attributes:
        description: the point, non-blank.
        score: importance 0-100 (clamped).
        ordinals: 1-based ordinals of the batch's reports it cites, valid ones only, first
            cited first; every ordinal of the batch when it cites no valid one.
    """

    description: str
    score: float
    ordinals: tuple[int, ...]


@dataclass(frozen=True)
class RankedPoint:
    """A key point with its citations mapped back to community ids.

    Attributes:
        description: the point.
        score: importance 0-100.
        report_ids: community ids of the reports it cites, first cited first.
    """

    description: str
    score: float
    report_ids: tuple[str, ...]


def hierarchy_cut(communities: Sequence[Community], level: int) -> list[Community]:
    """Return the cut of the hierarchy at ``level``.

    The communities at ``level`` plus the leaves (no child in ``communities``) at shallower
    levels: in a hierarchy whose children partition their parent's members, every entity
    is a member of exactly one community of the cut. A level deeper than the hierarchy gives
    every leaf.

    Args:
        communities: the whole hierarchy (0 = top level).
        level: the cut's level, >= 0.

    Returns:
        The cut's communities, in the order of ``communities``.

    Source: MS GraphRAG's community-level roll-up (seed 000 §6.1.1).
    """
    present = {c.id for c in communities}
    return [
        c
        for c in communities
        if c.level == level
        or (c.level < level and not any(k in present for k in c.children_ids))
    ]


def choose_cut(
    communities: Sequence[Community], level: int | None, max_reports: int
) -> CutChoice:
    """Return the cut global search maps.

    ``level`` None: the deepest cut of at most ``max_reports`` communities. A configured level
    (clamped to the deepest level) whose cut is larger gives way to the deepest shallower cut
    that fits, which covers the same entities in broader reports. When not even the top cut
    fits, the configured cut (the top cut when ``level`` is None) is returned ``capped``: the
    caller keeps the ``max_reports`` of it most similar to the question.

    Args:
        communities: the whole hierarchy.
        level: the configured level, or None.
        max_reports: the most reports mapped, >= 1.

    Returns:
        The chosen cut; an empty cut at level 0 when there are no communities.

    Source: seed 000 §6.1.1 (fixed cut, cap, similarity fallback).
    """
    if not communities:
        return CutChoice(level=0, community_ids=())
    top = min(c.level for c in communities)
    deepest = max(c.level for c in communities)
    wanted = deepest if level is None else min(max(level, top), deepest)
    for depth in range(wanted, top - 1, -1):
        cut = hierarchy_cut(communities, depth)
        if len(cut) <= max_reports:
            return CutChoice(level=depth, community_ids=tuple(c.id for c in cut))
    fallback = top if level is None else wanted
    ids = tuple(c.id for c in hierarchy_cut(communities, fallback))
    return CutChoice(level=fallback, community_ids=ids, capped=True)


class DynamicWalk:
    """Dynamic community selection: rate top-down, follow the children of relevant reports.

    Start with the top-level communities. After each round of ratings, a community rated at
    least ``threshold`` is kept and its children are rated next (a relevant child replaces
    its parent, which is broader); one that could not be rated (None) is kept, unrated, and
    not followed. When a round leaves nothing to rate and nothing has been kept yet, the
    whole next level is rated, down to ``max_level``.

    Usage: ``while ids := walk.frontier(): walk.record(ratings_of(ids))``, then `selected`.

    Args:
        communities: the whole hierarchy.
        threshold: the rating (1-10) from which a report counts as relevant.
        max_level: the deepest level rated whole by the fallback; None: every level.

    Source: MS GraphRAG's ``DynamicCommunitySelection`` (seed 000 §6.1.1); unlike upstream
    the walk follows relevant reports to the leaves.
    """

    def __init__(
        self, communities: Sequence[Community], threshold: int, max_level: int | None = None
    ) -> None:
        self._by_id = {c.id: c for c in communities}
        self._threshold = threshold
        deepest = max((c.level for c in communities), default=0)
        self._max_level = deepest if max_level is None else min(max_level, deepest)
        top = min((c.level for c in communities), default=0)
        self._level = top
        self._frontier = [c.id for c in communities if c.level == top]
        self.ratings: dict[str, int | None] = {}
        self._kept: dict[str, None] = {}

    def frontier(self) -> list[str]:
        """Return the community ids to rate next (empty: the walk is over)."""
        return list(self._frontier)

    def record(self, ratings: Mapping[str, int | None]) -> None:
        """Take the ratings of the current frontier (a missing id counts as unrated)."""
        following: list[str] = []
        for cid in self._frontier:
            rating = ratings.get(cid)
            self.ratings[cid] = rating
            if rating is not None and rating < self._threshold:
                continue
            self._kept[cid] = None
            if rating is None:
                continue
            parent = self._by_id[cid].parent_id
            if parent is not None:
                self._kept.pop(parent, None)
            following += [k for k in self._by_id[cid].children_ids if k in self._by_id]
        if following:
            self._level += 1
        elif not self._kept and self._level < self._max_level:
            self._level += 1
            following = [
                c.id for c in self._by_id.values()
                if c.level == self._level and c.id not in self.ratings
            ]  # fmt: skip
        self._frontier = [c for c in dict.fromkeys(following) if c not in self.ratings]

    def selected(self) -> list[tuple[str, int | None]]:
        """Return the kept ``(community id, rating)`` pairs, best rating first, unrated last.

        Ties keep the order in which they were rated.
        """
        kept = [(cid, self.ratings.get(cid)) for cid in self._kept]
        return sorted(kept, key=lambda p: (p[1] is None, -(p[1] or 0)))


def report_header(ordinal: int) -> str:
    """Return the line that introduces report ``ordinal`` (1-based) in a map batch."""
    return f"----- Report {ordinal} -----"


def format_batch(texts: Sequence[str]) -> str:
    """Return the reports of one map batch as prompt text, each under its 1-based ordinal."""
    return "\n\n".join(f"{report_header(i)}\n{t.strip()}" for i, t in enumerate(texts, start=1))


def pack_batches(token_counts: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Pack reports, in order, into batches of at most ``max_tokens`` tokens.

    Args:
        token_counts: the tokens of each report as shown in a batch (header included).
        max_tokens: the batch budget; a report larger than it gets a batch of its own.

    Returns:
        Batches of indexes into ``token_counts``, in order; every index exactly once.
    """
    batches: list[list[int]] = []
    used = 0
    for i, n in enumerate(token_counts):
        if batches and batches[-1] and used + n <= max_tokens:
            batches[-1].append(i)
            used += n
            continue
        batches.append([i])
        used = n
    return batches


def _strip_thinking(reply: str) -> str:
    return _THINK_BLOCK.sub(" ", reply)


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        match = _NUMBER.search(value)
        return float(match.group(0)) if match else None
    return None


def _ordinals(value: object, batch_size: int) -> tuple[int, ...]:
    items = value if isinstance(value, list) else [value]
    out: list[int] = []
    for item in items:
        n = _number(item)
        if n is None or n != int(n) or not 1 <= int(n) <= batch_size:
            continue
        if int(n) not in out:
            out.append(int(n))
    return tuple(out) or tuple(range(1, batch_size + 1))


def parse_map_reply(reply: str, batch_size: int) -> list[KeyPoint] | None:
    """Read the key points of one map reply.

    The reply holds a JSON object ``{"points": [{"description", "score", "reports"}]}``,
    possibly fenced or inside prose. A point without a non-blank description or a numeric
    score is skipped; scores are clamped to 0-100 (a numeric string is read); ordinals
    outside ``1..batch_size`` are dropped, and a point citing no valid ordinal cites the
    whole batch.

    Args:
        reply: the model's reply text.
        batch_size: the number of reports in the batch.

    Returns:
        The points in reply order; ``[]`` for a readable reply without points; None when the
        reply holds no object with a ``points`` list (the batch stays unrated).
    """
    data = parse_json_object(_strip_thinking(reply))
    if data is None or not isinstance(data.get("points"), list):
        return None
    raw_points = data["points"]
    assert isinstance(raw_points, list)
    points: list[KeyPoint] = []
    for raw in raw_points:
        if not isinstance(raw, dict):
            continue
        description = raw.get("description")
        score = _number(raw.get("score"))
        if not isinstance(description, str) or not description.strip() or score is None:
            continue
        points.append(
            KeyPoint(
                description=description.strip(),
                score=min(100.0, max(0.0, score)),
                ordinals=_ordinals(raw.get("reports"), batch_size),
            )
        )
    return points


def parse_rating(reply: str, *, low: int = 1, high: int = 10) -> int | None:
    """Return a relevance rating: the first number of ``reply``, rounded and clamped.

    Reasoning blocks (``<think>...</think>``) are skipped.

    Returns:
        An integer in ``[low, high]``, or None when the reply holds no number.
    """
    match = _NUMBER.search(_strip_thinking(reply))
    if match is None:
        return None
    return min(high, max(low, round(float(match.group(0)))))


def rank_points(points: Iterable[RankedPoint], threshold: float) -> list[RankedPoint]:
    """Return the points scoring above ``threshold``, best first (ties keep their order)."""
    kept = [p for p in points if p.score > threshold]
    return sorted(kept, key=lambda p: -p.score)


def _point_line(n: int, point: RankedPoint, titles: Mapping[str, str]) -> str:
    names = [titles.get(i, i) for i in point.report_ids]
    cited = f" [reports: {'; '.join(names)}]" if names else ""
    return f"{n}. (importance {point.score:g}) {point.description}{cited}"


def pack_points(
    points: Sequence[RankedPoint],
    counter: _Counter,
    max_tokens: int,
    titles: Mapping[str, str] | None = None,
) -> tuple[str, list[RankedPoint]]:
    """Pack ranked points into one section of at most ``max_tokens`` tokens.

    Points are added best first until the next does not fit; the first point is cut to fit
    when it alone is too long, so a non-empty input never gives an empty section.

    Args:
        points: ranked points, best first.
        counter: counts and cuts tokens.
        max_tokens: the section's budget.
        titles: community id -> report title, to name the cited reports.

    Returns:
        ``(text, packed)``: the section text ("" for no points) and the points it holds.
    """
    names = titles or {}
    if not points:
        return "", []
    lines = [_POINTS_HEADING]
    used = counter.count(_POINTS_HEADING)
    packed: list[RankedPoint] = []
    for point in points:
        line = _point_line(len(packed) + 1, point, names)
        n = counter.count(line)
        if used + n > max_tokens:
            if not packed:
                lines.append(counter.truncate(line, max(1, max_tokens - used)))
                packed.append(point)
            break
        lines.append(line)
        used += n
        packed.append(point)
    return "\n".join(lines), packed
