"""Text that is not valid Unicode where a query enters (issue 15 item 6, the query side).

A command line holding bytes that are not UTF-8 reaches Python as lone surrogates
(``surrogateescape``); a library caller can pass such strings too. Each kind of field is
tried: the question is repaired (U+FFFD) and answered; a filter value, a conversation or
user id, a strategy name or another text setting is refused with a one-line `UsageError`
naming the field. Before, they failed in the tokenizer (`EmbeddingModelError`), in SQLite
(a bare `UnicodeEncodeError`, exit 1) or in the JSON output.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.graph_fixture import GraphFixture, graph_app

from unified_kg_rag.domain.models import RAGOutput
from unified_kg_rag.retrieval.models import RAGInput
from unified_kg_rag.util.errors import UsageError

pytestmark = pytest.mark.integration

UKR = [sys.executable, "-m", "unified_kg_rag.cli"]
BROKEN = "\udce9"  # the byte 0xE9 (é in Latin-1) as Python decodes it from a non-UTF-8 argv


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("unicode_project")

    async def build() -> None:
        async with graph_app(path):
            pass

    asyncio.run(build())
    return path


def ask(project: Path, request: RAGInput) -> RAGOutput:
    async def main() -> RAGOutput:
        async with graph_app(project) as fx:
            return await GraphFixture.chain(fx).ainvoke(request)

    return asyncio.run(main())


def test_a_question_with_a_lone_surrogate_is_repaired_and_answered(project: Path) -> None:
    out = ask(project, RAGInput(question=f"Where was Marie Curie born? caf{BROKEN}",
                                strategy="naive"))  # fmt: skip
    assert out.question == "Where was Marie Curie born? caf\ufffd"
    assert out.sources and out.answer_kind == "extractive"
    json.loads(out.model_dump_json())  # serialisable


def test_the_repaired_question_is_kept_in_conversation_memory(project: Path) -> None:
    first = ask(project, RAGInput(question=f"Where was Marie Curie born{BROKEN}",
                                  strategy="naive", conversation_id="c1"))  # fmt: skip
    second = ask(project, RAGInput(question="Who did she work with?", strategy="naive",
                                   conversation_id="c1"))  # fmt: skip
    assert first.question.endswith("born\ufffd")
    assert second.metadata["standalone_question"].startswith("Where was Marie Curie born\ufffd")


@pytest.mark.parametrize(
    ("request_fields", "field"),
    [
        ({"filters": {"path": f"marie{BROKEN}.txt"}}, "filters.path"),
        ({"filters": {"path": ["marie.txt", f"x{BROKEN}"]}}, "filters.path"),
        ({"conversation_id": f"c{BROKEN}"}, "conversation_id"),
        ({"conversation_id": "c2", "user_id": f"u{BROKEN}"}, "user_id"),
        ({"strategy": f"na{BROKEN}ive"}, "strategy"),
        ({"overrides": {"index": f"default{BROKEN}"}}, "query.index"),
    ],
)
def test_other_fields_with_a_lone_surrogate_are_refused_naming_the_field(
    project: Path, request_fields: dict[str, Any], field: str
) -> None:
    fields: dict[str, Any] = {"question": "Where was Marie Curie born?", **request_fields}
    fields.setdefault("strategy", "naive")
    with pytest.raises(UsageError) as info:
        ask(project, RAGInput(**fields))
    assert info.value.field == field
    message = str(info.value)
    assert "not valid Unicode" in message and "U+DCE9" in message
    message.encode("utf-8")  # printable: the value is shown escaped
    assert "\n" not in message


# ------------------------------------------------------------------ a real ukr process


@pytest.fixture
def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("UKR_")}
    return {**clean, "PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8"}


def ukr(env: dict[str, str], *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*UKR, *args], env=env, capture_output=True, timeout=300)


def test_ukr_query_with_non_utf8_bytes_in_the_question(project: Path, env: dict[str, str]) -> None:
    question = b"Where was Marie Curie born? caf\xe9"  # Latin-1 bytes on a UTF-8 system
    result = ukr(env, "query", question, "-C", str(project), "-s", "naive", "--json")
    assert result.returncode == 0, result.stderr.decode()
    out = json.loads(result.stdout)
    assert out["question"] == "Where was Marie Curie born? caf\ufffd" and out["sources"]
    printed = ukr(env, "query", question, "-C", str(project), "-s", "naive")
    assert printed.returncode == 0, printed.stderr.decode()
    assert b"Sources cited" in printed.stdout


@pytest.mark.parametrize(
    ("option", "field"),
    [
        ([b"--filter", b"path=marie\xe9.txt"], "filters.path"),
        ([b"--conversation", b"c\xe9"], "conversation_id"),
        ([b"--user", b"u\xe9", b"--conversation", b"c3"], "user_id"),
    ],
)
def test_ukr_query_refuses_non_utf8_bytes_in_other_options(
    project: Path, env: dict[str, str], option: list[bytes], field: str
) -> None:
    result = ukr(env, "query", "Where was Marie Curie born?", "-C", str(project), "-s",
                 "naive", *option)  # fmt: skip
    assert result.returncode == 2, (result.stdout + result.stderr).decode()
    (line,) = result.stderr.decode().strip().splitlines()
    assert line.startswith(f"UsageError: {field}: is not valid Unicode text")
    assert "\\udce9" in line  # the value, escaped
