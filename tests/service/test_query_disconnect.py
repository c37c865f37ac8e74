"""A streamed query whose client leaves before the answer starts is stopped on the server."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import httpx
import pytest

from tests.support.openai_server import FakeOpenAIServer, Scripted
from tests.support.server import index_good_docs, serving

pytestmark = pytest.mark.integration


def test_a_client_leaving_before_the_first_piece_stops_the_query(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from unified_kg_rag.service.access import ACCESS_LOGGER
    from unified_kg_rag.service.app import create_app

    pytest.importorskip("uvicorn")
    index_good_docs(tmp_path)
    with FakeOpenAIServer() as llm:
        llm.script(Scripted(reply="Barn owls hunt voles [1].", delay_s=8, times=None))
        (tmp_path / "ukr.yaml").write_text(
            f"llm:\n  kind: openai\n  cache: false\n  max_retries: 0\n  openai:\n"
            f"    base_url: {llm.base_url}\n    api_key: k\n    model: slow-model\n",
            encoding="utf-8")  # fmt: skip
        caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
        with serving(create_app(tmp_path, environ={})) as url:
            ask = {"question": "What do barn owls hunt?", "strategy": "naive", "stream": True}
            with pytest.raises(httpx.ReadTimeout):  # Stop: the client gives up and hangs up
                httpx.post(f"{url}/v1/query", json=ask, timeout=httpx.Timeout(60, read=1.5))
            left = time.monotonic()
            lines: list[str] = []
            while time.monotonic() - left < 6 and not lines:  # the model still "thinks" (8 s)
                lines = [r.getMessage() for r in caplog.records
                         if r.name == ACCESS_LOGGER and "/v1/query" in r.getMessage()]  # fmt: skip
                time.sleep(0.1)
    assert lines and " 499 " in f" {lines[0]} ", lines  # logged as the client closing
    assert len(llm.requests_to("/chat/completions")) == 1  # asked once, not retried
