"""A query whose client leaves before the answer starts is stopped on the server: the
web UI's Stop, a client's timeout; for `/v1/query` streamed or not, and the chat APIs."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.openai_server import FakeOpenAIServer, Scripted
from tests.support.server import index_good_docs, serving

pytestmark = pytest.mark.integration

QUESTION = "What do barn owls hunt?"
CASES: list[tuple[str, dict[str, Any]]] = [
    ("/v1/query", {"question": QUESTION, "strategy": "naive", "stream": True}),
    ("/v1/query", {"question": QUESTION, "strategy": "naive"}),
    ("/v1/chat/completions", {"model": "ukr/default/naive", "stream": True,
                              "messages": [{"role": "user", "content": QUESTION}]}),
    ("/api/chat", {"model": "ukr-default:naive", "stream": False,
                   "messages": [{"role": "user", "content": QUESTION}]}),
]  # fmt: skip


def test_a_client_leaving_before_the_first_piece_stops_the_query(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from unified_kg_rag.service.access import ACCESS_LOGGER
    from unified_kg_rag.service.app import create_app

    pytest.importorskip("uvicorn")
    index_good_docs(tmp_path)
    with FakeOpenAIServer() as llm:
        llm.script(Scripted(reply="Barn owls hunt voles [1].", delay_s=7, times=None))
        (tmp_path / "ukr.yaml").write_text(
            f"llm:\n  kind: openai\n  cache: false\n  max_retries: 0\n  openai:\n"
            f"    base_url: {llm.base_url}\n    api_key: k\n    model: slow-model\n",
            encoding="utf-8")  # fmt: skip
        caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
        with serving(create_app(tmp_path, environ={})) as url:
            for path, body in CASES:
                caplog.clear()
                with pytest.raises(httpx.ReadTimeout):  # the client gives up and hangs up
                    httpx.post(url + path, json=body, timeout=httpx.Timeout(60, read=1.5))
                left = time.monotonic()
                lines: list[str] = []
                while time.monotonic() - left < 5 and not lines:  # the model "thinks" 7 s
                    lines = [r.getMessage() for r in caplog.records
                             if r.name == ACCESS_LOGGER and path in r.getMessage()]  # fmt: skip
                    time.sleep(0.1)
                assert lines and " 499 " in f" {lines[0]} ", (path, body, lines)
    assert len(llm.requests_to("/chat/completions")) == len(CASES)  # each asked once
