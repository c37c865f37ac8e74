"""A community report's input: its entities and relationships packed within a token budget.

Packed as Microsoft GraphRAG's ``sort_context`` packs them (seed 000 §4.3): the community's
entities by degree, then the relationships among them edge by edge by combined endpoint
degree, each with its endpoints, within a token budget; sub-community reports are added under
a second budget when the community's own data was cut. Rendered as CSV-like tables, which
models read well and which cost few tokens.

Not here: the prompt, the reply parser and the stored report (`domain.graph.reports`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.graph.claims import Claim, claim_order
from unified_kg_rag.domain.models import Community, CommunityReport, Entity, Relationship
from unified_kg_rag.domain.text.tokens import grapheme_floor

__all__ = [
    "CLAIM_HEADER",
    "ENTITY_HEADER",
    "RELATIONSHIP_HEADER",
    "SUB_REPORT_HEADER",
    "ReportContext",
    "build_report_context",
    "entity_degrees",
]

ENTITY_HEADER = "-----Entities-----\nid,entity,type,description,degree"
"""Heading and column names of the entities table."""
RELATIONSHIP_HEADER = "-----Relationships-----\nid,source,target,type,description,weight"
"""Heading and column names of the relationships table."""
SUB_REPORT_HEADER = "-----Sub-community reports-----\nid,title,rating,summary"
"""Heading and column names of the sub-community reports table."""
CLAIM_HEADER = "-----Claims-----\nid,entity,object,type,status,period,description"
"""Heading and column names of the claims table (claim extraction on; GraphRAG covariates)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ReportContext(_Model):
    """The data one report prompt shows the model.

    Attributes:
        text: the CSV-like sections (entities, relationships, and sub-community reports when
            the community's own data was cut).
        truncated: True when some of the community's entities or relationships were left out
            (over ``max_entities`` or over the token budget).
        entity_ids: the entities shown, in the order shown.
        relationship_ids: the relationships shown, in the order shown.
        text_unit_ids: union of all members' lineage, sorted (provenance of the report).
        sub_community_ids: the communities whose reports were added, in the order shown.
        claim_ids: the claims shown (claims table), in the order shown.
    """

    text: str
    truncated: bool
    entity_ids: tuple[str, ...] = ()
    relationship_ids: tuple[str, ...] = ()
    text_unit_ids: tuple[str, ...] = ()
    sub_community_ids: tuple[str, ...] = ()
    claim_ids: tuple[str, ...] = ()


def entity_degrees(relationships: Iterable[Relationship]) -> dict[str, int]:
    """Return each endpoint's number of distinct neighbours (direction and type ignored).

    Self-loops add no neighbour; an entity with only a self-loop has degree 0.
    """
    neighbours: dict[str, set[str]] = {}
    for rel in relationships:
        a = neighbours.setdefault(rel.source_id, set())
        b = neighbours.setdefault(rel.target_id, set())
        if rel.source_id != rel.target_id:
            a.add(rel.target_id)
            b.add(rel.source_id)
    return {eid: len(ns) for eid, ns in neighbours.items()}


def build_report_context(
    community: Community,
    entities: Mapping[str, Entity],
    relationships: Sequence[Relationship],
    *,
    max_tokens: int,
    count: Callable[[str], int],
    sub_reports: Sequence[CommunityReport] = (),
    max_entities: int = 200,
    degrees: Mapping[str, int] | None = None,
    claims: Mapping[str, Sequence[Claim]] | None = None,
) -> ReportContext:
    """Pack a community's entities and relationships into a report context.

    The members are ranked by degree (descending, then id) and cut to ``max_entities``. The
    top entity is placed first and always (its description is cut to the budget if it alone
    overflows). The relationships among the ranked members, sorted by combined endpoint
    degree (desc), weight (desc) and id, then go in edge by edge, each with the rows of its
    endpoints not yet shown; one that does not fit is left out and the next tried. Members not
    yet shown (no relationship among them, or theirs did not fit) come last, in rank order,
    each if it fits. When anything was left out and ``sub_reports`` are given, their title,
    rating and summary are added in the given order under a second budget of ``max_tokens``.
    With ``claims``, the claims about the shown entities follow the relationships as a
    ``Claims`` table (entity order, then `claim_order`: status, start date, type,
    description), each if it fits in what the budget has
    left; the table is there only when it holds a row (a claim left out marks the context
    truncated).

    The budget is the sum of ``count`` over the lines of the text (section headers
    included); for a BPE or the estimate counter that is the count of the text itself.

    Args:
        community: the community.
        entities: entity id -> entity; members missing here are skipped.
        relationships: relationships (those with an endpoint outside the ranked members are
            ignored, so the whole graph's list may be passed).
        max_tokens: token budget of the entities and relationships; the sub-community
            reports get a second budget of the same size.
        count: a token counter (`TokenCounter.count`).
        sub_reports: the children's reports, biggest child first.
        max_entities: members considered at most.
        degrees: entity id -> degree in the whole graph; ``None`` uses `Entity.rank`.
        claims: subject entity id -> its claims (claim extraction on), else None.

    Returns:
        The context; see `ReportContext`.

    Source: Microsoft GraphRAG ``sort_context`` (community report context); seed 000 §4.3.
    """
    members = [m for m in community.member_ids if m in entities]
    degree: dict[str, int] = {
        m: degrees.get(m, entities[m].rank) if degrees is not None else entities[m].rank
        for m in members
    }
    ranked = sorted(members, key=lambda m: (-degree[m], m))
    truncated = len(ranked) > max_entities
    ranked = ranked[:max_entities]
    chosen = set(ranked)
    among = {r.id: r for r in relationships if r.source_id in chosen and r.target_id in chosen}
    edges = sorted(
        among.values(),
        key=lambda r: (-(degree[r.source_id] + degree[r.target_id]), -r.weight, r.id),
    )
    headers = _lines_cost(ENTITY_HEADER, count) + _lines_cost(RELATIONSHIP_HEADER, count)
    packer = _Packer(entities, degree, count, max_tokens - headers)
    if ranked:
        truncated = packer.add_top(ranked[0]) or truncated
    for rel in edges:
        truncated = not packer.add_edge(rel) or truncated
    for eid in ranked:
        truncated = not packer.add_entity(eid) or truncated
    sections = [
        "\n".join([ENTITY_HEADER, *packer.entity_rows]),
        "\n".join([RELATIONSHIP_HEADER, *packer.rel_rows]),
    ]
    claim_ids: list[str] = []
    if claims:
        about = [c for e in packer.entity_ids for c in sorted(claims.get(e, ()), key=claim_order)]
        claim_section, claim_ids = _claim_section(about, packer.left, count)
        truncated = len(claim_ids) < len(about) or truncated
        if claim_section:
            sections.append(claim_section)
    subs: list[str] = []
    if truncated and sub_reports:
        sub_section, subs = _sub_report_section(sub_reports, max_tokens, count)
        if sub_section:
            sections.append(sub_section)
    lineage = sorted({t for m in members for t in entities[m].text_unit_ids})
    return ReportContext(
        text="\n\n".join(sections),
        truncated=truncated,
        entity_ids=tuple(packer.entity_ids),
        relationship_ids=tuple(packer.rel_ids),
        text_unit_ids=tuple(lineage),
        sub_community_ids=tuple(subs),
        claim_ids=tuple(claim_ids),
    )


class _Packer:
    """The rows of one report context and the budget left (`build_report_context`)."""

    def __init__(
        self,
        entities: Mapping[str, Entity],
        degree: Mapping[str, int],
        count: Callable[[str], int],
        budget: int,
    ) -> None:
        self.entities = entities
        self.degree = degree
        self.count = count
        self.left = budget
        self.entity_rows: list[str] = []
        self.entity_ids: list[str] = []
        self.shown: set[str] = set()
        self.rel_rows: list[str] = []
        self.rel_ids: list[str] = []

    def entity_row(self, eid: str, n: int, description: str | None = None) -> str:
        e = self.entities[eid]
        desc = e.description if description is None else description
        return _csv_row(str(n), e.name, e.type, desc, str(self.degree[eid]))

    def add_top(self, eid: str) -> bool:
        """Add the top entity, its description cut to the budget if needed; True if cut."""
        n = len(self.entity_rows) + 1
        row = self.entity_row(eid, n)
        cut = self.count(row) > self.left
        if cut:
            row = _fit_row(
                self.entities[eid].description,
                self.left,
                self.count,
                lambda d: self.entity_row(eid, n, d),
            )
        self._take([row], [eid], [], None)
        return cut

    def add_edge(self, rel: Relationship) -> bool:
        """Add ``rel`` with its endpoints not yet shown, if they fit; False if not."""
        new = [e for e in dict.fromkeys((rel.source_id, rel.target_id)) if e not in self.shown]
        base = len(self.entity_rows) + 1
        rows = [self.entity_row(e, base + i) for i, e in enumerate(new)]
        rel_row = _csv_row(
            str(len(self.rel_rows) + 1),
            self.entities[rel.source_id].name,
            self.entities[rel.target_id].name,
            rel.type,
            rel.description,
            f"{rel.weight:g}",
        )
        return self._take(rows, new, [rel_row], rel.id)

    def add_entity(self, eid: str) -> bool:
        """Add ``eid`` alone if not shown yet and it fits; False if it does not fit."""
        if eid in self.shown:
            return True
        return self._take([self.entity_row(eid, len(self.entity_rows) + 1)], [eid], [], None)

    def _take(
        self, rows: list[str], ids: list[str], rel_rows: list[str], rel_id: str | None
    ) -> bool:
        cost = sum(self.count(r) for r in (*rows, *rel_rows))
        if cost > self.left and self.entity_rows:
            return False
        self.left -= cost
        self.entity_rows.extend(rows)
        self.entity_ids.extend(ids)
        self.shown.update(ids)
        self.rel_rows.extend(rel_rows)
        if rel_id is not None:
            self.rel_ids.append(rel_id)
        return True


def _table(
    header: str, rows: Sequence[tuple[str, Sequence[str]]], budget: int,
    count: Callable[[str], int],
) -> tuple[str, list[str]]:
    """Return ``header`` and the rows that fit in ``budget`` tokens, numbered ("" if none).

    ``rows`` are ``(id, fields)`` in order; a row that does not fit is skipped and a later,
    shorter one may still fit. Also returns the ids of the rows shown.
    """
    left = budget - _lines_cost(header, count)
    shown: list[str] = []
    ids: list[str] = []
    for item_id, fields in rows:
        row = _csv_row(str(len(shown) + 1), *fields)
        cost = count(row)
        if cost > left:
            continue
        left -= cost
        shown.append(row)
        ids.append(item_id)
    return ("\n".join([header, *shown]) if shown else ""), ids


def _sub_report_section(
    reports: Sequence[CommunityReport], max_tokens: int, count: Callable[[str], int]
) -> tuple[str, list[str]]:
    """Return the sub-community section within ``max_tokens`` ("" if none fits) and its ids."""
    return _table(SUB_REPORT_HEADER, [
        (r.community_id, (r.title, f"{r.rating:g}", r.summary)) for r in reports
    ], max_tokens, count)  # fmt: skip


def _claim_section(
    claims: Sequence[Claim], budget: int, count: Callable[[str], int]
) -> tuple[str, list[str]]:
    """Return the claims table within ``budget`` ("" when no row fits) and the ids shown."""
    def fields(claim: Claim) -> tuple[str, ...]:
        period = " to ".join(dict.fromkeys(d for d in (claim.start_date, claim.end_date) if d))
        return (claim.subject, claim.object, claim.type, claim.status, period,
                claim.description)  # fmt: skip

    return _table(CLAIM_HEADER, [(c.id, fields(c)) for c in claims], budget, count)


def _fit_row(
    description: str, budget: int, count: Callable[[str], int], render: Callable[[str], str]
) -> str:
    """Return the top entity's row with its description cut (at a grapheme boundary) to fit."""
    lo, hi = 0, len(description)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(render(description[: grapheme_floor(description, mid)])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return render(description[: grapheme_floor(description, lo)])


def _lines_cost(text: str, count: Callable[[str], int]) -> int:
    return sum(count(line) for line in text.split("\n"))


def _csv_row(*fields: str) -> str:
    """Join fields CSV-style on one line: whitespace folded, a field with ``,`` or ``"`` quoted."""
    out: list[str] = []
    for field in fields:
        value = " ".join(field.split())
        if "," in value or '"' in value:
            value = '"' + value.replace('"', '""') + '"'
        out.append(value)
    return ",".join(out)
