"""Override files at the edges: a byte-order mark, blank files, odd folder contents and paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.config.prompts import load_prompt_library
from unified_kg_rag.domain.extraction.format import (
    render_extraction_messages,
    render_gleaning_messages,
)
from unified_kg_rag.domain.extraction.records import ExtractionRecord
from unified_kg_rag.domain.prompts.library import PACKAGED
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.unit

EXTRACT = PACKAGED.packaged("extract_graph.v1")


def _library(project: Path, **prompts: Any) -> Any:
    config = UkrConfig(prompts=prompts)  # type: ignore[arg-type]
    return load_prompt_library(config, project)


def test_a_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    (tmp_path / "k.md").write_bytes("\ufeff=== user ===\nKeywords of {question}\n".encode())
    (tmp_path / "s.md").write_bytes("\ufeffBe brief.\n=== user ===\n{question}\n".encode())
    library = _library(tmp_path, files={"query_keywords": "k.md", "query_entities": "s.md"})
    messages = library.messages("query_keywords", {"question": "Q?"})
    assert [(m.role, m.content) for m in messages] == [("user", "Keywords of Q?")]
    messages = library.messages("query_entities", {"question": "Q?"})
    assert [(m.role, m.content) for m in messages] == [("system", "Be brief."), ("user", "Q?")]


def test_schema_types_left_in_an_override_is_filled_with_nothing_without_a_schema() -> None:
    template = "PLAIN\n{schema_types}\n=== user ===\n{text}\n"
    messages = render_extraction_messages("T", entity_types=["A"], template=template)
    assert [m.content for m in messages] == ["PLAIN\n", "T"]  # parts are stripped, then filled
    glean = render_gleaning_messages("T", ExtractionRecord(fingerprint="f"), entity_types=["A"],
                                     template="G {schema_types}|{text}")  # fmt: skip
    assert glean[-1].content == "G |T"
    # the packaged prompts have no {schema_types}: rendering them is unchanged
    packaged = render_extraction_messages("T", entity_types=["A"], template=EXTRACT)
    assert "{schema_types}" not in EXTRACT
    assert packaged == PACKAGED.messages("extract_graph", {"text": "T", "entity_types": "A"})


@pytest.mark.parametrize("text", ["", "  \n\n\t\n"])
def test_an_empty_override_is_a_one_line_error(tmp_path: Path, text: str) -> None:
    (tmp_path / "empty.md").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"^empty\.md: the override is empty$"):
        _library(tmp_path, files={"answer_system": "empty.md"})


def test_dotfiles_and_readmes_in_the_folder_are_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / ".#extract_graph.md").write_text("lock", encoding="utf-8")
    (folder / "README.md").write_text("# My prompts", encoding="utf-8")
    (folder / "readme.es.md").write_text("Mis prompts", encoding="utf-8")
    (folder / "extract_graph.MD").write_text("upper-case suffix: not read", encoding="utf-8")
    (folder / "answer_user.md").write_text("Q {question} S {sources}", encoding="utf-8")
    library = _library(tmp_path, dir="prompts")
    assert library.source("answer_user") == "prompts/answer_user.md"
    assert library.source("extract_graph") == "packaged"


def test_folder_and_file_paths_expand_home_and_a_file_is_not_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "answer_user.md").write_text("A {question} {sources}", encoding="utf-8")
    (tmp_path / "k.md").write_text("K {question}", encoding="utf-8")
    library = _library(tmp_path / "elsewhere", dir="~/p", files={"query_keywords": "~/k.md"})
    assert library.get("answer_user") == "A {question} {sources}"
    assert library.get("query_keywords") == "K {question}"
    with pytest.raises(ConfigurationError, match=r"^prompts\.dir: k\.md is not a folder$"):
        _library(tmp_path, dir="k.md")


def test_an_unknown_version_names_the_versions_there_are(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "extract_graph.v2.md").write_text("{text}", encoding="utf-8")
    with pytest.raises(
        ConfigurationError,
        match=r"^prompts/extract_graph\.v2\.md: no prompt "
        r"named 'extract_graph\.v2' \(extract_graph exists as v1\); prompts: ",
    ):
        _library(tmp_path, dir="prompts")


def test_one_prompt_twice_in_prompts_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("A {text}", encoding="utf-8")
    (tmp_path / "b.md").write_text("B {text}", encoding="utf-8")
    with pytest.raises(
        ConfigurationError,
        match=r"^prompts\.files\.extract_graph\.v1: "
        r"prompts\.files\.extract_graph overrides the same prompt "
        r"\(extract_graph\.v1\); keep one$",
    ):
        _library(tmp_path, files={"extract_graph": "a.md", "extract_graph.v1": "b.md"})


def test_the_same_file_written_two_ways_is_no_conflict(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("A {text}", encoding="utf-8")
    config = UkrConfig(prompts={"files": {"extract_graph": "a.md"}},  # type: ignore[arg-type]
                       graph={"extraction": {"prompt_file": "./a.md"}})  # fmt: skip
    assert load_prompt_library(config, tmp_path).get("extract_graph") == "A {text}"
    (tmp_path / "b.md").write_text("B {text}", encoding="utf-8")
    config = UkrConfig(prompts={"files": {"extract_graph": "a.md"}},  # type: ignore[arg-type]
                       graph={"extraction": {"prompt_file": "b.md"}})  # fmt: skip
    with pytest.raises(ConfigurationError, match=r"also overrides extract_graph\.v1"):
        load_prompt_library(config, tmp_path)


@pytest.mark.parametrize(("name", "hint"), [
    ("EXTRACT_GRAPH", "(names are case-sensitive: did you mean 'extract_graph'?)"),
    ("Extract_Graph.v1", "(names are case-sensitive: did you mean 'extract_graph.v1'?)"),
    ("extract_graph.v2", "(extract_graph exists as v1)"),
    ("comunity_report", "(did you mean 'community_report'?)"),
])  # fmt: skip
def test_an_unknown_name_suggests_the_close_match(name: str, hint: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        PACKAGED.resolve(name)
    assert str(caught.value).startswith(f"no prompt named {name!r} {hint}; prompts: ")
