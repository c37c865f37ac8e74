"""The HippoRAG replay model, served over the real OpenAI wire format on 127.0.0.1.

Needs ``../shared/data/multihop/hipporag`` (skipped with the path when absent), except the
loader test, which writes its own small file.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.openai_server import FakeOpenAIServer
from tests.support.replay_server import (
    DEFAULT_DATA_PATH,
    ReplayModel,
    context_rows,
    entity_type,
    load_passages,
    replay_model_of,
    require_replay_data,
    start_replay_server,
)

from unified_kg_rag.adapters.llm.openai import OpenAIChatModel
from unified_kg_rag.config.models import OpenAIChatConfig
from unified_kg_rag.domain.extraction.format import (
    glean_merge,
    parse_extraction_reply,
    parse_gleaning_reply,
    render_extraction_messages,
    render_gleaning_messages,
)
from unified_kg_rag.domain.extraction.records import ExtractionRecord
from unified_kg_rag.domain.graph.report_context import ENTITY_HEADER, RELATIONSHIP_HEADER
from unified_kg_rag.domain.models import Message
from unified_kg_rag.domain.prompts import load_prompt
from unified_kg_rag.evaluation.prepare import prepare_hipporag

pytestmark = pytest.mark.integration

DATA_DIR = DEFAULT_DATA_PATH.parent
JOURNAL_ENTITIES = [
    "1963", "2018 Impact Factor", "American Institute of Physics", "Jan Philip Solovej",
    "January 1960", "Journal of Mathematical Physics", "University of Copenhagen",
]


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus folder `ukr eval prepare hipporag` writes from the MuSiQue files."""
    require_replay_data()
    out = tmp_path_factory.mktemp("musique")
    prepare_hipporag(DATA_DIR / "musique_train.json", DATA_DIR / "musique_train_corpus.json", out)
    return out / "corpus"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    running = start_replay_server(require_replay_data())
    try:
        yield running
    finally:
        running.stop()


def ask(server: FakeOpenAIServer, prompt: str, *, streaming: bool = False) -> str:
    model = OpenAIChatModel(OpenAIChatConfig(base_url=server.base_url, model="replay",
                                             max_tokens=4000))
    messages = [Message(role="system", content="You extract knowledge graphs."),
                Message(role="user", content=prompt)]

    async def run() -> str:
        if streaming:
            return "".join([chunk async for chunk in model.stream(messages)])
        return (await model.complete(messages)).text

    return asyncio.run(run())


def extraction_prompt(unit_text: str) -> str:
    return f"Extract entities and relationships.\n\n<text>\n{unit_text}\n</text>\n\nAnswer:"


def gleaning_prompt(unit_text: str, items: str = "<entities>\nNone\n</entities>") -> str:
    return (f"Find what is missing.\n\n<text>\n{unit_text}\n</text>\n\n<current_items>\n"
            f"{items}\n</current_items>\n")


def section(reply: str, tag: str) -> list[str]:
    return re.findall(rf"<{tag}>(.*?)</{tag}>", reply, re.DOTALL)


def test_extraction_replays_the_recorded_passage(server: FakeOpenAIServer,
                                                 corpus_dir: Path) -> None:
    unit = (corpus_dir / "00000.md").read_text(encoding="utf-8")
    assert unit.startswith("# Journal of Mathematical Physics\n\n")
    reply = ask(server, extraction_prompt(unit))
    entities = section(reply, "entity")
    assert [section(e, "name")[0] for e in entities] == JOURNAL_ENTITIES
    journal = entities[JOURNAL_ENTITIES.index("Journal of Mathematical Physics")]
    assert section(journal, "type") == ["ENTITY"]
    assert section(journal, "span") == ["Journal of Mathematical Physics"]
    assert section(journal, "description")[0].startswith(
        "Journal of Mathematical Physics published by American Institute of Physics. ")
    assert section(entities[4], "type") == ["DATE"]  # January 1960
    relationships = section(reply, "relationship")
    assert len(relationships) == 6
    assert (section(relationships[0], "source"), section(relationships[0], "target"),
            section(relationships[0], "type")) == (
        ["Journal of Mathematical Physics"], ["American Institute of Physics"], ["PUBLISHED_BY"])
    assert section(relationships[4], "description") == [
        "Jan Philip Solovej is from University of Copenhagen."]
    assert ask(server, extraction_prompt(unit), streaming=True) == reply
    assert replay_model_of(server).calls["extraction"] == 2


def test_real_templates_and_parser_round_trip(corpus_dir: Path) -> None:
    unit = (corpus_dir / "00000.md").read_text(encoding="utf-8")
    server = start_replay_server(require_replay_data(), glean_adds=True)
    try:
        model = OpenAIChatModel(OpenAIChatConfig(base_url=server.base_url, model="replay",
                                                 max_tokens=4000))
        types = ["PERSON", "ORGANIZATION"]
        ask = render_extraction_messages(unit, entity_types=types,
                                         template=load_prompt("extract_graph.v1"))
        parsed = parse_extraction_reply(asyncio.run(model.complete(ask)).text)
        assert [e.name for e in parsed.entities] == JOURNAL_ENTITIES
        assert len(parsed.relationships) == 6 and not parsed.truncated
        record = ExtractionRecord(fingerprint="f", entities=parsed.entities,
                                  relationships=parsed.relationships)
        rounds = []
        for _ in range(3):  # the extraction loop's rule: ask again while a round adds
            glean = render_gleaning_messages(unit, record, entity_types=types,
                                             template=load_prompt("glean_graph.v1"))
            reply = parse_gleaning_reply(asyncio.run(model.complete(glean)).text)
            merged = glean_merge(record.entities, record.relationships, reply)
            rounds.append(merged.added)
            record = record.model_copy(update={"entities": merged.entities})
            if not merged.added:
                break
        assert rounds == [True, False]
        assert record.entities[-1].name == "Journal of Mathematical Physics gleaned note"
        assert replay_model_of(server).calls == {"extraction": 1, "gleaning": 2}
    finally:
        server.stop()


def test_every_prepared_corpus_file_matches_its_passage(corpus_dir: Path) -> None:
    model = ReplayModel(require_replay_data())
    files = sorted(corpus_dir.glob("*.md"))
    assert len(files) == len(model.passages) == 1890
    for i, path in enumerate(files):
        assert model.find_passage(path.read_text(encoding="utf-8")) is model.passages[i], path


def test_part_of_a_passage_and_unknown_text(server: FakeOpenAIServer) -> None:
    model = replay_model_of(server)
    passage = model.passages[5]
    reply = ask(server, extraction_prompt(passage.text[100:400]))
    assert section(reply, "name")[: len(passage.entities)] == list(passage.entities)
    empty = ask(server, extraction_prompt("A text no passage of MuSiQue holds at all."))
    assert section(empty, "entities") == ["\nNone\n"]
    assert section(empty, "relationships") == ["\nNone\n"]
    assert model.unmatched == 1


def test_gleaning_replies_with_empty_sections(server: FakeOpenAIServer,
                                              corpus_dir: Path) -> None:
    unit = (corpus_dir / "00000.md").read_text(encoding="utf-8")
    reply = ask(server, gleaning_prompt(unit))
    assert section(reply, "entities") == ["\nNone\n"]
    assert section(reply, "relationships") == ["\nNone\n"]
    assert replay_model_of(server).calls == {"gleaning": 1}


def test_gleaning_adds_one_entity_on_the_first_round_only(corpus_dir: Path) -> None:
    model = ReplayModel(require_replay_data(), glean_adds=True)
    unit = (corpus_dir / "00000.md").read_text(encoding="utf-8")
    first = model.reply({"messages": [{"role": "user", "content": gleaning_prompt(unit)}]})
    assert section(first, "name") == ["Journal of Mathematical Physics gleaned note"]
    second = model.reply({"messages": [{"role": "user", "content": gleaning_prompt(
        unit, "<entities>\n<entity><name>Journal of Mathematical Physics gleaned note</name>"
        "</entity>\n</entities>")}]})
    assert section(second, "entities") == ["\nNone\n"]


def test_report_prompt_gets_valid_json(server: FakeOpenAIServer) -> None:
    context = (  # the tables of domain.graph.report_context
        f"{ENTITY_HEADER}\n"
        "1,JOURNAL OF MATHEMATICAL PHYSICS,ENTITY,\"A journal, monthly\",5\n"
        "2,AMERICAN INSTITUTE OF PHYSICS,ENTITY,Publisher,1\n"
        "3,JAN PHILIP SOLOVEJ,ENTITY,Editor,2\n\n"
        f"{RELATIONSHIP_HEADER}\n"
        "1,JOURNAL OF MATHEMATICAL PHYSICS,AMERICAN INSTITUTE OF PHYSICS,PUBLISHED_BY,"
        "published by,7\n"
    )
    reply = ask(server, f"Write a report.\n<report_context>\n{context}</report_context>\n")
    report = json.loads(reply)
    assert report["title"] == "JOURNAL OF MATHEMATICAL PHYSICS"
    assert report["summary"] == ("This community centres on JOURNAL OF MATHEMATICAL PHYSICS, "
                                 "AMERICAN INSTITUTE OF PHYSICS, JAN PHILIP SOLOVEJ.")
    assert report["rating"] == 4.0  # 3 entity rows + 1 relationship row
    assert len(report["findings"]) == 3
    assert all(set(f) == {"summary", "explanation"} for f in report["findings"])
    assert replay_model_of(server).calls == {"report": 1}


def test_context_rows_reads_markdown_tables() -> None:
    context = ("## Entities\n| id | name | description |\n|---|---|---|\n| 7 | Seoul | city |\n"
               "| 8 | 서울대학교 | university |\n\n## Relationships\n| source | target |\n"
               "|---|---|\n| Seoul | 서울대학교 |\n")
    assert context_rows(context) == (["Seoul", "서울대학교"], 3)


def test_summary_prompt_joins_distinct_fragments(server: FakeOpenAIServer) -> None:
    long_fragment = " ".join(f"w{i}" for i in range(70))
    prompt = ("<name>Carl Rogers</name>\n<descriptions>\n- A psychologist.\n"
              f"- Founded person-centered therapy.\n- A psychologist.\n- {long_fragment}\n"
              "</descriptions>\n")
    words = ask(server, prompt).split()
    assert words[:6] == ["A", "psychologist.", "Founded", "person-centered", "therapy.", "w0"]
    assert len(words) == 60 and words[-1] == "w54"


def test_other_prompts_are_echoed(server: FakeOpenAIServer) -> None:
    assert ask(server, "What is the capital of France?") == "echo: What is the capital of France?"
    assert replay_model_of(server).calls == {"other": 1}


def test_loader_cleans_nan_numbers_and_odd_triples(tmp_path: Path) -> None:
    raw = ('{"docs": [{"title": "T", "text": "Alpha  met Beta in 1999.", "passage": "",'
           ' "extracted_entities": ["Alpha", NaN, 1999, "", "Alpha", " Beta "],'
           ' "extracted_triples": [["Alpha", "met", "Beta"], ["Alpha", "met"],'
           ' ["Alpha", "met in", 1999.0], [NaN, "x", "Beta"], ["A", "b", "c", "d"]]}],'
           ' "avg_ent_chars": NaN}')
    path = tmp_path / "openie.json"
    path.write_text(raw, encoding="utf-8")
    [passage] = load_passages(path)
    assert passage.text == "Alpha met Beta in 1999."
    assert passage.entities == ("Alpha", "1999", "Beta")
    assert passage.triples == (("Alpha", "met", "Beta"), ("Alpha", "met in", "1999"))
    assert [entity_type(e) for e in passage.entities] == ["ENTITY", "DATE", "ENTITY"]
