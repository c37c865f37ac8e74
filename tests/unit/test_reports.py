import pytest

from unified_kg_rag.domain.graph.reports import (
    REPORT_PROMPT,
    ParsedReport,
    build_report_context,
    community_report,
    entity_degrees,
    parse_report_reply,
    render_report_messages,
)
from unified_kg_rag.domain.models import Community, CommunityReport, Entity, Relationship
from unified_kg_rag.domain.prompts import load_prompt
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.util.errors import ModelOutputError

pytestmark = pytest.mark.unit

COUNT = EstimateTokenCounter().count
LONG = " ".join(f"word{i}" for i in range(300))


def ent(eid: str, rank: int, description: str = "", units: tuple[str, ...] = ()) -> Entity:
    return Entity(
        id=eid,
        name=f"Name {eid.upper()}",
        type="THING",
        description=description or f"About {eid}.",
        rank=rank,
        text_unit_ids=units or (f"tu-{eid}",),
    )


def rel(rid: str, s: str, t: str, weight: float = 1.0, description: str = "") -> Relationship:
    return Relationship(
        id=rid,
        source_id=s,
        target_id=t,
        type="LINKS",
        description=description or f"{s} links {t}.",
        weight=weight,
        text_unit_ids=(f"tu-{rid}",),
    )


ENTITIES = {
    "a": ent("a", 5),
    "b": ent("b", 4),
    "c": ent("c", 3),
    "d": ent("d", 2),
    "e": ent("e", 1),  # no relationship inside the community
}
COMMUNITY = Community(id="com", level=0, member_ids=("a", "b", "c", "d", "e"))


def test_entity_degrees_count_distinct_neighbours() -> None:
    rels = [
        rel("1", "a", "b"),
        rel("2", "b", "a"),  # other direction: same neighbour
        rel("3", "a", "b"),
        rel("4", "a", "c"),
        rel("5", "d", "d"),  # self-loop: no neighbour
    ]
    assert entity_degrees(rels) == {"a": 2, "b": 1, "c": 1, "d": 0}


def test_relationships_packed_by_combined_degree_then_weight_then_id() -> None:
    rels = [
        rel("r-cd", "c", "d", weight=9.0),  # degree 5
        rel("r-bc", "b", "c", weight=1.0),  # degree 7, lighter
        rel("r-ad", "a", "d", weight=2.0),  # degree 7, heavier
        rel("r-ab2", "a", "b", weight=3.0),  # degree 9, same weight: by id
        rel("r-ab1", "b", "a", weight=3.0),
        rel("r-out", "a", "zz"),  # endpoint outside the community
    ]
    ctx = build_report_context(COMMUNITY, ENTITIES, rels, max_tokens=10_000, count=COUNT)
    assert ctx.relationship_ids == ("r-ab1", "r-ab2", "r-ad", "r-bc", "r-cd")
    assert ctx.entity_ids == ("a", "b", "d", "c", "e")  # top first, endpoints, then the rest
    assert not ctx.truncated
    assert ctx.text_unit_ids == ("tu-a", "tu-b", "tu-c", "tu-d", "tu-e")
    assert ctx.text.splitlines()[:4] == [
        "-----Entities-----",
        "id,entity,type,description,degree",
        "1,Name A,THING,About a.,5",
        "2,Name B,THING,About b.,4",
    ]
    assert "1,Name B,Name A,LINKS,b links a.,3" in ctx.text.splitlines()
    assert ctx.text.index("-----Relationships-----") > ctx.text.index("5,Name E,THING")


def test_an_edge_that_does_not_fit_is_skipped_and_the_next_tried() -> None:
    fitting = [rel("r-ac", "a", "c"), rel("r-cd", "c", "d")]
    reference = build_report_context(COMMUNITY, ENTITIES, fitting, max_tokens=10_000, count=COUNT)
    budget = COUNT(reference.text)
    huge = rel("r-ab", "a", "b", weight=9.0, description=LONG)  # first by degree
    ctx = build_report_context(COMMUNITY, ENTITIES, [huge, *fitting], max_tokens=budget, count=COUNT)
    assert ctx.truncated
    assert ctx.relationship_ids == ("r-ac", "r-cd")
    assert ctx.entity_ids == ("a", "c", "d", "b", "e")
    assert ctx.text == reference.text
    tighter = build_report_context(
        COMMUNITY, ENTITIES, [huge, *fitting], max_tokens=budget - 1, count=COUNT
    )
    assert tighter.entity_ids == ("a", "c", "d", "b")  # the last entity no longer fits
    assert COUNT(tighter.text) <= budget - 1


def test_top_entity_always_fits() -> None:
    entities = {**ENTITIES, "a": ent("a", 5, description=LONG)}
    ctx = build_report_context(COMMUNITY, entities, [], max_tokens=120, count=COUNT)
    assert ctx.entity_ids[0] == "a"
    assert ctx.truncated
    assert COUNT(ctx.text) <= 120
    row = ctx.text.splitlines()[2]
    assert row.startswith("1,Name A,THING,word0 word1")
    description = row.split(",")[3]
    assert LONG.startswith(description)
    assert len(description) < len(LONG)
    tiny = build_report_context(COMMUNITY, entities, [], max_tokens=1, count=COUNT)
    assert tiny.entity_ids == ("a",)


def test_max_entities_keeps_the_best_connected() -> None:
    rels = [rel("r-ab", "a", "b"), rel("r-ac", "a", "c")]
    ctx = build_report_context(
        COMMUNITY, ENTITIES, rels, max_tokens=10_000, count=COUNT, max_entities=2
    )
    assert ctx.entity_ids == ("a", "b")
    assert ctx.relationship_ids == ("r-ab",)
    assert ctx.truncated
    assert ctx.text_unit_ids == ("tu-a", "tu-b", "tu-c", "tu-d", "tu-e")  # every member's


def test_degrees_override_entity_rank() -> None:
    ctx = build_report_context(
        COMMUNITY, ENTITIES, [], max_tokens=10_000, count=COUNT, degrees={"e": 50, "a": 0}
    )
    assert ctx.entity_ids == ("e", "b", "c", "d", "a")


def sub_report(cid: str, summary: str) -> CommunityReport:
    return CommunityReport(community_id=cid, title=f"Title {cid}", summary=summary, rating=6.5)


def test_sub_reports_added_only_when_the_context_was_cut() -> None:
    subs = [sub_report("big", "Big child."), sub_report("long", LONG), sub_report("small", "S.")]
    whole = build_report_context(
        COMMUNITY, ENTITIES, [], max_tokens=10_000, count=COUNT, sub_reports=subs
    )
    assert not whole.truncated
    assert "Sub-community" not in whole.text
    assert whole.sub_community_ids == ()

    cut = build_report_context(
        COMMUNITY, ENTITIES, [], max_tokens=100, count=COUNT, sub_reports=subs
    )
    assert cut.truncated
    assert cut.sub_community_ids == ("big", "small")  # the long one is over the second budget
    section = cut.text[cut.text.index("-----Sub-community reports-----") :]
    assert section.splitlines() == [
        "-----Sub-community reports-----",
        "id,title,rating,summary",
        "1,Title big,6.5,Big child.",
        "2,Title small,6.5,S.",
    ]
    assert COUNT(section) <= 100
    own = cut.text[: cut.text.index("-----Sub-community reports-----")]
    assert COUNT(own) <= 100


def test_csv_fields_are_quoted_and_folded() -> None:
    entities = {"a": ent("a", 1, description='Says "hi",\nthen leaves.'), "b": ent("b", 1)}
    com = Community(id="x", level=0, member_ids=("a", "b"))
    ctx = build_report_context(com, entities, [], max_tokens=10_000, count=COUNT)
    assert '1,Name A,THING,"Says ""hi"", then leaves.",1' in ctx.text.splitlines()


def test_render_report_messages_fills_placeholders_once() -> None:
    entities = {"a": ent("a", 1, description="A {context} and {community_name} literal.")}
    com = Community(id="x", level=0, member_ids=("a",))
    ctx = build_report_context(com, entities, [], max_tokens=10_000, count=COUNT)
    messages = render_report_messages(
        "Level 0 Community x", ctx, template=load_prompt(REPORT_PROMPT)
    )
    assert [m.role for m in messages] == ["system", "user"]
    assert "JSON object" in messages[0].content
    assert "=== user ===" not in messages[0].content + messages[1].content
    user = messages[1].content
    assert f"<report_context>\n{ctx.text}\n</report_context>" in user
    assert "Level 0 Community x" in user
    assert "A {context} and {community_name} literal." in user
    only_user = render_report_messages("N", ctx, template="Report {community_name}:\n{context}")
    assert [(m.role, m.content) for m in only_user] == [("user", f"Report N:\n{ctx.text}")]


REPORT_JSON = (
    '{"title": "Acme and partners", "summary": "Acme works with Beta.", "rating": 7.5, '
    '"rating_explanation": "Large firms.", "findings": ['
    '{"summary": "Acme leads", "explanation": "Acme is the hub."}, '
    '{"summary": "Beta supplies", "explanation": "Beta ships parts."}]}'
)
EXPECTED = ParsedReport(
    title="Acme and partners",
    summary="Acme works with Beta.",
    rating=7.5,
    rating_explanation="Large firms.",
    findings=(("Acme leads", "Acme is the hub."), ("Beta supplies", "Beta ships parts.")),
)


@pytest.mark.parametrize(
    "reply",
    [
        REPORT_JSON,
        f"```json\n{REPORT_JSON}\n```",
        f"Here is the report:\n\n{REPORT_JSON}\n\nLet me know if you need more.",
        f'<think>Draft: {{"title": "draft"}} hmm</think>\n{REPORT_JSON}',
        f"Let me think about the entities...\n</think>\n\n```\n{REPORT_JSON}\n```",
        f'{{"title": "First try", "summary": "x"}}\nCorrected:\n{REPORT_JSON}',
        REPORT_JSON.replace('"title"', '"Title"').replace('"summary": "Acme w', '"Summary": "Acme w'),
    ],
    ids=["plain", "fenced", "prose", "think-block", "lone-close-think", "last-wins", "key-case"],
)
def test_parse_report_reply_tolerates_wrappers(reply: str) -> None:
    assert parse_report_reply(reply) == EXPECTED


@pytest.mark.parametrize(
    ("rating", "expected"),
    [("15", 10.0), ("-2", 0.0), ('"7.5"', 7.5), ('"8/10"', 8.0), ("null", 0.0), ("true", 0.0)],
)
def test_rating_is_clamped(rating: str, expected: float) -> None:
    assert parse_report_reply(f'{{"title": "T", "rating": {rating}}}').rating == expected


def test_findings_as_strings_and_missing_fields() -> None:
    parsed = parse_report_reply('{"title": " T ", "findings": ["One", {"explanation": "E"}, {}]}')
    assert parsed == ParsedReport(title="T", findings=(("One", ""), ("", "E")))


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I cannot write this report.",
        '{"summary": "no title", "rating": 3}',
        '{"title": "   ", "summary": "blank title"}',
        '{"title": "T", "summary": "S",}',  # trailing comma: unreadable
        '<think>Still thinking {"title": "T"}',  # reasoning cut off
        '{"title": "T", "summary": "cut off by the len',
        '<think>{"title": "draft"}</think>Sorry, I cannot.',  # the draft is not the answer
        'Reasoning {"title": "draft"}\n</think>\nNo report.',
    ],
    ids=[
        "empty",
        "prose",
        "no-title",
        "blank-title",
        "trailing-comma",
        "open-think",
        "cut",
        "draft-in-think",
        "draft-before-lone-close",
    ],
)
def test_unreadable_replies_raise(reply: str) -> None:
    with pytest.raises(ModelOutputError):
        parse_report_reply(reply)


def test_community_report_renders_markdown() -> None:
    com = Community(id="com", level=2, member_ids=("a", "b"))
    report = community_report(com, EXPECTED, rank=9.0, text_unit_ids=["t2", "t1", "t2"])
    assert report.full_content == (
        "# Acme and partners\n\nAcme works with Beta.\n\nRating: 7.5/10. Large firms.\n\n"
        "## Acme leads\n\nAcme is the hub.\n\n## Beta supplies\n\nBeta ships parts."
    )
    assert report.findings == ("Acme leads: Acme is the hub.", "Beta supplies: Beta ships parts.")
    assert (report.community_id, report.level, report.rank) == ("com", 2, 9.0)
    assert (report.rating, report.rating_explanation) == (7.5, "Large firms.")
    assert report.text_unit_ids == ("t1", "t2")
    bare = community_report(com, ParsedReport(title="T"), rank=0.0, text_unit_ids=())
    assert bare.full_content == "# T\n\nRating: 0/10"


def test_bundled_prompt_has_the_replay_markers() -> None:
    template = load_prompt(REPORT_PROMPT)
    system, user = template.split("\n=== user ===\n")
    assert "<report_context>\n{context}\n</report_context>" in user
    assert "{community_name}" in user
    for key in ('"title"', '"summary"', '"rating"', '"rating_explanation"', '"findings"'):
        assert key in system
