"""The Ollama-compatible API on a real uvicorn server, called with the ``ollama`` client (issue 17)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.support.server import serving_good_docs

pytestmark = pytest.mark.integration

ollama = pytest.importorskip("ollama")
pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Index three small documents (no LLM: extractive answers), then serve the project."""
    with serving_good_docs(tmp_path_factory.mktemp("ollama")) as url:
        yield url


def _client(url: str) -> ollama.Client:
    return ollama.Client(host=url, timeout=120)


def test_tags_and_show_name_index_and_strategy(base_url: str) -> None:
    names = [m.model for m in _client(base_url).list().models]
    assert names[0] == "ukr-default:latest"
    assert {"ukr-default:naive", "ukr-default:ppr"} <= set(names)
    assert "ukr-default:local" not in names
    shown = _client(base_url).show("ukr-default:ppr")
    assert shown.modelinfo is not None and shown.modelinfo["ukr.strategy"] == "ppr"
    assert httpx.get(f"{base_url}/api/version").json()["version"]


def test_chat_answers_with_footnoted_sources(base_url: str) -> None:
    reply = _client(base_url).chat(model="ukr-default:naive", options={"temperature": 0},
                                   messages=[{"role": "user", "content": "What do barn owls hunt?"}])
    assert reply.done and reply.done_reason == "stop"
    answer, _, notes = (reply.message.content or "").partition("\n\nSources:\n")
    assert "voles" in answer and notes.startswith("[1] ")
    assert reply.total_duration is not None and reply.total_duration > 0


def test_streamed_chat_reassembles_to_the_plain_one(base_url: str) -> None:
    client = _client(base_url)
    ask = [{"role": "user", "content": "Who lays the eggs of the hive?"}]
    plain = client.chat(model="ukr-default:naive", messages=ask)
    parts = list(client.chat(model="ukr-default:naive", messages=ask, stream=True))
    assert [p.done for p in parts] == [False] * (len(parts) - 1) + [True]
    assert "".join(p.message.content or "" for p in parts) == plain.message.content


def test_generate_answers_the_prompt(base_url: str) -> None:
    reply = _client(base_url).generate(model="ukr-default:naive", prompt="What do barn owls hunt?")
    assert reply.done and "voles" in (reply.response or "")
    assert "\n\nSources:\n[1] " in (reply.response or "")


def test_a_follow_up_reads_the_turns_sent_and_ukr_holds_the_output(base_url: str) -> None:
    ask = {"role": "user", "content": "Who lays the eggs of the hive?"}
    body = {"model": "ukr-default", "stream": False, "messages": [
        ask, {"role": "assistant", "content": "The queen [1].\n\nSources:\n[1] bees.md"},
        {"role": "user", "content": "And what do the workers do?"}]}
    reply = httpx.post(f"{base_url}/api/chat", json=body, timeout=120).json()
    metadata = reply["ukr"]["metadata"]
    assert metadata["standalone_question"] == (
        "Who lays the eggs of the hive? And what do the workers do?")
    assert reply["message"]["content"].startswith(reply["ukr"]["answer"])


def test_the_raw_stream_is_ndjson_ending_with_done(base_url: str) -> None:
    body = {"model": "ukr-default:naive", "prompt": "What do barn owls hunt?"}  # stream: default
    form = {"content-type": "application/x-www-form-urlencoded"}  # what `curl -d` sends
    with httpx.stream("POST", f"{base_url}/api/generate", content=json.dumps(body),
                      headers=form, timeout=120) as reply:
        assert reply.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in reply.iter_lines() if line]
    final = lines[-1]
    assert final["done"] is True and final["response"] == ""
    assert {"total_duration", "eval_count", "prompt_eval_count", "ukr"} <= set(final)
    assert all(line["done"] is False for line in lines[:-1])


def test_errors_are_ollamas(base_url: str) -> None:
    client = _client(base_url)
    with pytest.raises(ollama.ResponseError) as missing:
        client.chat(model="ukr-nosuch", messages=[{"role": "user", "content": "owls"}])
    assert missing.value.status_code == 404
    assert missing.value.error == "model: 'ukr-nosuch' does not exist: there is no index 'nosuch'"
    with pytest.raises(ollama.ResponseError) as refused:
        client.chat(model="ukr-default", format="json",
                    messages=[{"role": "user", "content": "owls"}])
    assert refused.value.status_code == 400 and "only text answers" in refused.value.error
