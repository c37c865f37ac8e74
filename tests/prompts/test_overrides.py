"""Prompt overrides by folder and by file: checked at start, reaching every call, re-keying.

A real OpenAI-compatible server on 127.0.0.1 records every request, so these tests see the
messages a user's run sends. Source: seed 000 §11.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeEmbedder
from tests.stages.test_graph_build import reply, write_docs
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.bootstrap import build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.config.prompts import load_prompt_library
from unified_kg_rag.domain.prompts.library import PACKAGED
from unified_kg_rag.ingestion.graph.build import graph_extractor
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.integration

EXTRACT = "ASTRO-DOMAIN: the texts are about astronomy.\n" + PACKAGED.packaged("extract_graph.v1")
REPORT = "ASTRO report.\n=== user ===\nCommunity {community_name}\n<report_context>\n{context}\n</report_context>\n"
ANSWER = "ASTRO answer for: {question}\n\nSources:\n{sources}\n"


def _config(server: FakeOpenAIServer | None = None, **prompts: Any) -> UkrConfig:
    llm = ({"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k"},
            "retry_initial_s": 0.01, "retry_max_s": 0.05} if server else {"kind": "none"})
    return UkrConfig(llm=llm, graph={"communities": {"min_community_size": 2}},
                     prompts=prompts)  # type: ignore[arg-type]  # fmt: skip


def _contents(server: FakeOpenAIServer) -> list[str]:
    return ["\n".join(m["content"] for m in r.body["messages"])
            for r in server.requests_to("/chat/completions")]  # fmt: skip


def test_overrides_by_folder_and_file_reach_the_calls_and_rekey_extraction(
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    (project / "prompts").mkdir(parents=True)
    (project / "prompts" / "extract_graph.md").write_text(EXTRACT, encoding="utf-8")
    (project / "report.md").write_text(REPORT, encoding="utf-8")
    (project / "prompts" / "answer_user.v1.md").write_text(ANSWER, encoding="utf-8")
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        config = _config(server, dir="prompts", files={"community_report": "report.md"})
        async with build_app(config, project) as app:
            app.embedder = FakeEmbedder()
            report = await app.index_pipeline("default").run([corpus])
            extractor = graph_extractor(app.config, app.chat_model, app.index().records,
                                        prompts=app.prompts)  # fmt: skip
            packaged = graph_extractor(app.config, app.chat_model, app.index().records,
                                       prompts=PACKAGED)  # fmt: skip
            calls = len(server.requests_to("/chat/completions"))
            await app.chain().ainvoke("Who designed the Analytical Engine?", strategy="naive")
            return {"report": report, "key": extractor.fingerprint("x"),
                    "packaged_key": packaged.fingerprint("x"), "calls": calls,
                    "sources": {n: app.prompts.source(n) for n in app.prompts.names()}}

    with FakeOpenAIServer(reply=reply) as server:
        out = asyncio.run(main(server))
        contents = _contents(server)
    assert out["report"].graph is not None and out["report"].graph.complete
    graph_calls = [c for c in contents[: out["calls"]] if "<text>" in c]
    extraction = [c for c in graph_calls if "<current_items>" not in c]
    assert len(extraction) == 4  # one per document, each with the folder's override
    assert all(c.startswith("ASTRO-DOMAIN: the texts are about astronomy.\nYou build")
               for c in extraction)  # fmt: skip
    gleaning = [c for c in graph_calls if "<current_items>" in c]
    assert len(gleaning) == 4 and all(c.startswith("You review") for c in gleaning)  # packaged
    reports = [c for c in contents if "<report_context>" in c]
    assert reports and all(c.startswith("ASTRO report.\nCommunity ") for c in reports)
    answer = contents[out["calls"]:]
    assert len(answer) == 1 and "ASTRO answer for: Who designed the Analytical Engine?" in answer[0]
    assert out["key"] != out["packaged_key"]
    assert out["sources"]["extract_graph.v1"] == "prompts/extract_graph.md"
    assert out["sources"]["community_report.v1"] == "report.md"
    assert out["sources"]["answer_user.v1"] == "prompts/answer_user.v1.md"
    assert out["sources"]["glean_graph.v1"] == "packaged"


def test_the_older_prompt_file_field_keeps_working_and_rekeys(tmp_path: Path) -> None:
    (tmp_path / "x.md").write_text(EXTRACT, encoding="utf-8")
    config = _config()
    old = config.model_copy(update={"graph": config.graph.model_copy(update={
        "extraction": config.graph.extraction.model_copy(update={"prompt_file": "x.md"})})})
    new = _config(files={"extract_graph.v1": "x.md"})
    via_old, via_new = load_prompt_library(old, tmp_path), load_prompt_library(new, tmp_path)
    assert via_old.get("extract_graph") == via_new.get("extract_graph") == EXTRACT
    assert via_old.source("extract_graph") == "x.md"
    (tmp_path / "y.md").write_text(EXTRACT + "\nMore.", encoding="utf-8")
    both = old.model_copy(update={"prompts": new.prompts.model_copy(
        update={"files": {"extract_graph": "y.md"}})})
    with pytest.raises(ConfigurationError, match=r"^graph\.extraction\.prompt_file: "
                       r"prompts\.files\.extract_graph also overrides extract_graph\.v1"):
        load_prompt_library(both, tmp_path)


@pytest.mark.parametrize(("files", "content", "message"), [
    ({"prompts/extract_graph.md": "Extract.\n=== user ===\n{entity_types}\n"}, None,
     r"^prompts/extract_graph\.md: missing placeholder \{text\}$"),
    ({"prompts/extract_graph.v1.md": "Extract {text} as {shape}.\n"}, None,
     r"^prompts/extract_graph\.v1\.md: unknown placeholder \{shape\} \(prompt extract_graph\.v1 "
     r"has \{entity_types\}, \{schema_types\}, \{text\}; write \{\{ and \}\} for literal braces\)$"),
    ({"prompts/extract_graphs.md": "{text}"}, None,
     r"^prompts/extract_graphs\.md: no prompt named 'extract_graphs' \(did you mean "
     r"'extract_graph'\?\); prompts: [a-z_, ]*"
     r"extract_graph, extract_graph_schema, "),
    ({"prompts/extract_graph.md": "{text}", "prompts/extract_graph.v1.md": "{text}"}, None,
     r"^prompts/extract_graph\.v1\.md: prompts/extract_graph\.md overrides the same prompt "),
    ({}, b"Extract \xff{text}", r"^prompts/extract_graph\.md: prompt file is not UTF-8 text "
     r"\(byte 0xff at offset 8\) \(set by prompts\.dir\)$"),
])  # fmt: skip
def test_a_bad_override_in_the_folder_is_a_one_line_error(
    tmp_path: Path, files: dict[str, str], content: bytes | None, message: str
) -> None:
    (tmp_path / "prompts").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    if content is not None:
        (tmp_path / "prompts" / "extract_graph.md").write_bytes(content)
    with pytest.raises(ConfigurationError, match=message) as caught:
        build_app(_config(dir="prompts"), tmp_path)
    assert "\n" not in str(caught.value)


def test_a_missing_file_folder_or_prompt_name_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=(
            r"^gone\.md: prompt file not found \(set by prompts\.files\.community_report\)$")):
        build_app(_config(files={"community_report": "gone.md"}), tmp_path)
    with pytest.raises(ConfigurationError, match=r"^prompts\.dir: folder nowhere does not exist$"):
        build_app(_config(dir="nowhere"), tmp_path)
    with pytest.raises(ConfigurationError, match=r"^prompts\.files\.nope: no prompt named 'nope'"):
        build_app(_config(files={"nope": "x.md"}), tmp_path)


def test_literal_braces_and_optional_settings_in_an_override(tmp_path: Path) -> None:
    (tmp_path / "r.md").write_text('Reply {{"title": ...}}.\n=== user ===\n{context}\n',
                                   encoding="utf-8")  # fmt: skip
    library = load_prompt_library(_config(files={"community_report": "r.md"}), tmp_path)
    system, user = library.messages("community_report", {"context": "C {x}",
                                                         "community_name": "N"})  # fmt: skip
    assert (system.content, user.content) == ('Reply {"title": ...}.', "C {x}")


def test_an_override_reaches_the_judge_call(tmp_path: Path) -> None:
    from unified_kg_rag.evaluation.judges.correctness import judge_correctness

    (tmp_path / "judge.md").write_text(
        "Grade strictly.\n=== user ===\nQ: {question}\nRefs: {references}\nA: {answer}\n"
        'Reply {{"label": "correct"}}\n', encoding="utf-8")  # fmt: skip

    async def main(server: FakeOpenAIServer) -> str | None:
        config = _config(server, files={"judge_correctness": "judge.md"})
        async with build_app(config, tmp_path) as app:
            assert app.chat_model is not None
            verdict = await judge_correctness(app.chat_model, "Q1?", ["R1"], "A1",
                                              prompts=app.prompts)  # fmt: skip
            return verdict.label

    with FakeOpenAIServer(reply=lambda body: '{"label": "correct", "reason": "ok"}') as server:
        label = asyncio.run(main(server))
        messages = server.requests_to("/chat/completions")[0].body["messages"]
    assert label == "correct"
    assert messages == [
        {"role": "system", "content": "Grade strictly."},
        {"role": "user", "content": 'Q: Q1?\nRefs: - R1\nA: A1\nReply {"label": "correct"}'},
    ]


def test_with_a_schema_the_schema_variant_or_the_users_override_is_used(tmp_path: Path) -> None:
    from unified_kg_rag.domain.extraction.schema import EntityTypeSpec, ExtractionSchema

    schema = ExtractionSchema(entity_types=(EntityTypeSpec(name="VESSEL", description="A ship."),))
    (tmp_path / "plain.md").write_text("PLAIN {text}\n{schema_types}\n", encoding="utf-8")
    (tmp_path / "variant.md").write_text("VARIANT {text}\n{schema_types}\n", encoding="utf-8")

    def templates(**files: str) -> tuple[str, str]:
        library = load_prompt_library(_config(files=files), tmp_path)
        ext = graph_extractor(_config(), None, None,  # type: ignore[arg-type]
                              schema=schema, prompts=library)
        return ext.extraction_template, ext.gleaning_template

    extract, glean = templates()
    assert extract.startswith(PACKAGED.packaged("extract_graph_schema")[:40])
    assert "- VESSEL: A ship." in extract and "{schema_types}" not in glean
    extract, _ = templates(extract_graph="plain.md")
    assert extract.startswith("PLAIN {text}\n") and "- VESSEL: A ship." in extract
    extract, _ = templates(extract_graph="plain.md", extract_graph_schema="variant.md")
    assert extract.startswith("VARIANT {text}\n")
    library = load_prompt_library(_config(files={"extract_graph": "plain.md"}), tmp_path)
    plain = graph_extractor(_config(), None, None, prompts=library)  # type: ignore[arg-type]
    assert plain.extraction_template == "PLAIN {text}\n{schema_types}\n"  # no schema: as written


def test_a_missing_file_of_an_older_field_names_that_field(tmp_path: Path) -> None:
    config = UkrConfig(graph={"claims": {"prompt_file": "nope.md"}})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=(
            r"^nope\.md: prompt file not found \(set by graph\.claims\.prompt_file\)$")):
        build_app(config, tmp_path)
