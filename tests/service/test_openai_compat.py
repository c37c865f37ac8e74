"""The OpenAI-compatible chat API on a real uvicorn server, called with the ``openai`` SDK (issue 17)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.openai_server import FakeOpenAIServer
from tests.support.server import index_good_docs, serving, serving_good_docs

pytestmark = pytest.mark.integration

openai = pytest.importorskip("openai")
pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Index three small documents (no LLM: extractive answers), then serve the project."""
    with serving_good_docs(tmp_path_factory.mktemp("chat")) as url:
        yield url


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0, timeout=120)


def test_models_are_the_strategies_each_index_serves(base_url: str) -> None:
    ids = [m.id for m in _client(base_url).models.list()]
    assert ids[0] == "ukr/default"  # the default strategy first
    assert {"ukr/default/naive", "ukr/default/ppr", "ukr/default/lazy"} <= set(ids)
    assert "ukr/default/local" not in ids  # no LLM graph in this index
    one = _client(base_url).models.retrieve("ukr/default/naive")
    assert one.id == "ukr/default/naive" and one.owned_by == "ukr"


def test_a_completion_answers_with_footnoted_sources(base_url: str) -> None:
    reply = _client(base_url).chat.completions.create(
        model="ukr/default/naive", temperature=0.2, max_tokens=50,  # accepted, ignored
        messages=[{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": "What do barn owls hunt?"}],
    )
    text = reply.choices[0].message.content or ""
    ukr = reply.model_extra["ukr"]
    assert reply.choices[0].finish_reason == "stop"
    assert ukr["strategy"] == "naive" and ukr["answer_kind"] == "extractive"
    assert text.startswith(ukr["answer"])
    footnotes = text.removeprefix(ukr["answer"])
    assert footnotes.startswith("\n\nSources:\n[")
    for n in ukr["cited"]:
        source = ukr["sources"][n - 1]
        assert f"[{n}] {source['path']}, chars {source['start_char']}-" in footnotes
    assert any("voles" in s["text"] for s in ukr["sources"])
    assert reply.usage is not None and reply.usage.total_tokens == 0  # no LLM: no tokens


def test_a_streamed_completion_reassembles_to_the_plain_one(base_url: str) -> None:
    messages = [{"role": "user", "content": "Who lays the eggs of the hive?"}]
    client = _client(base_url)
    plain = client.chat.completions.create(model="ukr/default/naive", messages=messages)
    chunks = list(client.chat.completions.create(
        model="ukr/default/naive", messages=messages, stream=True,
        stream_options={"include_usage": True},
    ))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == plain.choices[0].message.content
    assert chunks[0].choices[0].delta.role == "assistant"
    final = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(final) == 1 and final[0].model_extra["ukr"]["cited"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None  # include_usage


def test_a_follow_up_is_rewritten_from_the_turns_the_client_sends(base_url: str) -> None:
    client = _client(base_url)
    first = client.chat.completions.create(
        model="ukr/default/naive", messages=[{"role": "user", "content": "What do barn owls hunt?"}]
    )
    follow = client.chat.completions.create(model="ukr/default/naive", messages=[
        {"role": "user", "content": "What do barn owls hunt?"},
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "And where do they nest?"},
    ])
    metadata = follow.model_extra["ukr"]["metadata"]
    assert metadata["rewrite"] == "fallback"  # no LLM: the previous question carries over
    assert metadata["standalone_question"] == "What do barn owls hunt? And where do they nest?"


def test_errors_are_the_sdks_typed_errors_with_readable_messages(base_url: str) -> None:
    client = _client(base_url)
    ask = [{"role": "user", "content": "owls"}]
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="ukr/nosuch", messages=ask)
    assert missing.value.code == "model_not_found"
    assert "there is no index 'nosuch'" in missing.value.message
    with pytest.raises(openai.NotFoundError, match="does not serve 'local'"):
        client.models.retrieve("ukr/default/local")
    with pytest.raises(openai.BadRequestError, match="tools are not supported"):
        client.chat.completions.create(model="ukr/default", messages=ask, tools=[
            {"type": "function", "function": {"name": "f", "parameters": {}}}])
    with pytest.raises(openai.BadRequestError, match="last message must be the user's"):
        client.chat.completions.create(model="ukr/default", messages=[
            {"role": "user", "content": "owls"}, {"role": "assistant", "content": "hm"}])
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="ukr/default", messages=[])


def test_an_llm_answer_streams_in_pieces_and_matches_the_plain_one(tmp_path: Path) -> None:
    from unified_kg_rag.service.app import create_app

    index_good_docs(tmp_path)
    answer = "Barn owls hunt voles [1]. " * 200  # past the 4,096 held back for a lone </think>
    with FakeOpenAIServer(reply=lambda _: answer) as llm:
        (tmp_path / "ukr.yaml").write_text(
            f"llm:\n  kind: openai\n  openai:\n    base_url: {llm.base_url}\n"
            "    api_key: k\n    model: test-model\n", encoding="utf-8")
        with serving(create_app(tmp_path)) as url:
            client = _client(url)
            ask = [{"role": "user", "content": "What do barn owls hunt?"}]
            chunks = list(client.chat.completions.create(  # first: not from the cache
                model="ukr/default/naive", messages=ask, stream=True))
            plain = client.chat.completions.create(model="ukr/default/naive", messages=ask)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    ukr = plain.model_extra["ukr"]
    assert ukr["answer_kind"] == "generative" and ukr["cited"] == [1]
    assert plain.choices[0].message.content == (
        f"{answer.strip()}\n\nSources:\n[1] {ukr['sources'][0]['path']}, chars "
        f"{ukr['sources'][0]['start_char']}-{ukr['sources'][0]['end_char']}")
    assert text == plain.choices[0].message.content
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 3
    assert plain.usage is not None and plain.usage.completion_tokens > 0


def test_a_question_too_long_is_an_openai_shaped_error(base_url: str) -> None:
    body = {"model": "ukr/default", "messages": [{"role": "user", "content": "x" * 20_001}]}
    reply = httpx.post(f"{base_url}/v1/chat/completions", json=body, timeout=60)
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["code"] == "QuestionTooLong" and "max_question_chars" in error["message"]
    assert set(error) >= {"message", "type", "param", "code"}
