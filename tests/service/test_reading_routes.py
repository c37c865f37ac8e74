"""Reading evidence in place over HTTP: a passage in its document text, a message in its
thread-day, and follow-ups sent with their history (issue 18). Real uvicorn server, real
SQLite stores, real embedder; the message archive is the synthetic iMessage corpus."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.chat_corpus import ChatCorpus, index_chat_corpus
from tests.support.chatdb import schema_available
from tests.support.server import serving, serving_good_docs

pytestmark = pytest.mark.integration

uvicorn = pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_good_docs(tmp_path_factory.mktemp("reading")) as url:
        yield url


def _ask(base_url: str, question: str, **more: Any) -> dict[str, Any]:
    reply = httpx.post(f"{base_url}/v1/query", timeout=120,
                       json={"question": question, "strategy": "naive", **more})
    assert reply.status_code == 200, reply.text
    out: dict[str, Any] = reply.json()
    return out


def _owl_source(base_url: str) -> dict[str, Any]:
    out = _ask(base_url, "What do barn owls hunt?")
    source: dict[str, Any] = next(s for s in out["sources"] if "voles" in s["text"])
    return source


def _window(doc: dict[str, Any]) -> str:
    return "".join(s["text"] for s in doc["segments"])


def test_document_text_locates_a_passage_by_its_offsets(base_url: str) -> None:
    source = _owl_source(base_url)
    reply = httpx.get(f"{base_url}/v1/documents/{source['document_id']}/text",
                      params={"start_char": source["start_char"], "end_char": source["end_char"]})
    assert reply.status_code == 200, reply.text
    doc = reply.json()
    assert doc["document_id"] == source["document_id"] and doc["path"] == source["path"]
    assert doc["text_units"] >= 1 and doc["first_unit"] == 0
    assert (doc["passage_start"], doc["passage_end"]) == (source["start_char"], source["end_char"])
    seg = next(s for s in doc["segments"]
               if s["start_char"] <= doc["passage_start"] < s["end_char"])
    located = seg["text"][doc["passage_start"] - seg["start_char"]:
                          doc["passage_end"] - seg["start_char"]]
    assert located == source["text"]


def test_document_text_locates_a_passage_by_its_text_units(base_url: str) -> None:
    source = _owl_source(base_url)
    reply = httpx.get(f"{base_url}/v1/documents/{source['document_id']}/text",
                      params={"text_unit_ids": list(source["text_unit_ids"])})
    doc = reply.json()
    assert doc["passage_start"] == source["start_char"]
    assert "voles" in _window(doc)


def test_document_text_without_a_passage_starts_at_the_beginning(base_url: str) -> None:
    source = _owl_source(base_url)
    doc = httpx.get(f"{base_url}/v1/documents/{source['document_id']}/text").json()
    assert doc["passage_start"] is None and doc["more_before"] is False
    assert doc["segments"][0]["start_char"] == 0


@pytest.mark.parametrize(("path", "params", "status", "field"), [
    ("/v1/documents/nope/text", {}, 404, "document_id"),
    ("/v1/documents/{doc}/text", {"start_char": 10, "end_char": 3}, 400, "end_char"),
    ("/v1/documents/{doc}/text", {"max_chars": 0}, 422, None),
    ("/v1/messages/thread-day", {"thread": "t"}, 400, "message"),
    ("/v1/messages/thread-day", {"thread": "t", "day": "May 1"}, 400, "day"),
    ("/v1/messages/thread-day", {"thread": "t", "message": "g"}, 404, "message"),
])
def test_reading_errors_name_their_field(
    base_url: str, path: str, params: dict[str, Any], status: int, field: str | None
) -> None:
    doc = _owl_source(base_url)["document_id"] if "{doc}" in path else ""
    reply = httpx.get(base_url + path.format(doc=doc), params=params)
    assert reply.status_code == status, reply.text
    if field:
        assert reply.json()["error"]["field"] == field


def test_a_follow_up_with_history_is_rewritten_and_answered(base_url: str) -> None:
    first = "What do barn owls hunt?"
    out = _ask(base_url, "And where do they nest?",
               history=[{"question": first, "answer": "Voles [1]."}], stream=False)
    meta = out["metadata"]
    # no chat model in this project: the fallback rewrite joins the turns' questions
    assert meta["rewrite"] == "fallback"
    assert meta["standalone_question"] == f"{first} And where do they nest?"
    assert out["question"] == "And where do they nest?"


def test_history_with_a_conversation_id_is_refused(base_url: str) -> None:
    reply = httpx.post(f"{base_url}/v1/query", timeout=60, json={
        "question": "and then?", "history": [{"question": "q"}], "conversation_id": "c"})
    assert reply.status_code == 400, reply.text


def test_query_options_reach_the_chain(base_url: str) -> None:
    out = _ask(base_url, "What do barn owls hunt?", top_k=1, max_context_tokens=80,
               answer_style="comprehensive")
    assert len(out["sources"]) == 1
    assert out["metadata"]["context_tokens"] <= 80
    bad = httpx.post(f"{base_url}/v1/query", json={"question": "owls", "answer_style": "long"})
    assert bad.status_code == 422


# ----------------------------------------------------------------------------- messages

SCHEMA = "macos" if schema_available("macos") else "minimal"


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[ChatCorpus, Path]:
    """The synthetic iMessage corpus (its scripted messages and a little filler), indexed."""
    return index_chat_corpus(tmp_path_factory.mktemp("chat"), schema=SCHEMA)


def test_thread_day_shows_the_messages_around_an_evidence_message(
    archive: tuple[ChatCorpus, Path],
) -> None:
    from unified_kg_rag.service.app import create_app

    _corpus, project = archive
    with serving(create_app(project, environ={})) as url:
        out = _ask(url, "Who told me it was Dana's birthday?")
        assert out["evidence"]
        ref = next(m for m in out["evidence"] if "Dana" in m["text"])
        reply = httpx.get(f"{url}/v1/messages/thread-day",
                          params={"thread": ref["thread_id"], "message": ref["guid"]})
        assert reply.status_code == 200, reply.text
        day = reply.json()
        assert day["focus"] == ref["guid"] and day["thread_name"] == ref["thread_name"]
        guids = [m["guid"] for m in day["messages"]]
        assert ref["guid"] in guids and len(guids) >= 2
        shown = next(m for m in day["messages"] if m["guid"] == ref["guid"])
        assert shown["sender_name"] == ref["sender_name"]
        assert shown["timestamp"] == ref["timestamp"]
        assert "Dana" in shown["text"]
        # the day of the message, in the archive's render time zone (UTC here)
        assert day["span"] == ref["timestamp"][:10]
        assert all(m["text"].startswith(f"[{day['span']} ") for m in day["messages"])
        assert any(d["span"] == day["span"] for d in day["days"])
        # the same thread-day asked by its day
        by_day = httpx.get(f"{url}/v1/messages/thread-day", params={
            "thread": ref["thread_id"], "day": day["span"]}).json()
        assert by_day["document_id"] == day["document_id"] and by_day["focus"] is None
        assert [m["guid"] for m in by_day["messages"]] == guids
        # the transcript is a document: its text holds the message
        doc = httpx.get(f"{url}/v1/documents/{day['document_id']}/text").json()
        assert "Dana" in "".join(s["text"] for s in doc["segments"])
