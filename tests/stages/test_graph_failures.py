"""Graph-build failures of issue #15: cut replies, one item's failing calls, bad replies.

A real OpenAI-compatible HTTP server on 127.0.0.1 (scripted per prompt with
`tests.support.openai_server.Scripted` ``match``) and real SQLite, as a user's run:

- item 1: an extraction reply the provider cut (``finish_reason: content_filter``, with a
  partial record set) is not a finished record: the unit fails for now, its items before the
  cut are in the graph, and the next run asks again for it alone (Bedrock's
  ``guardrail_intervened`` too, on the real Bedrock test server); a cut summary or community
  report fails that item for now too;
- item 3: one unit (or one report) whose calls keep timing out or answering 503 fails alone
  while the server answers the others; a server that fails every call still stops the stage;
- item 6(b): one reply with a lone surrogate (a JSON escape), a NUL, a giant tail, names of
  punctuation only, NaN or huge scores, unbalanced XML, or a report whose JSON overflows or
  nests too deep fails at most its own item.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.stages.test_graph_build import (
    ITEMS,
    _chat_calls,
    _config,
    _run,
    _user,
    _xml,
    reply,
    write_docs,
)
from tests.support.bedrock_server import BedrockScripted, FakeBedrockServer
from tests.support.openai_server import FakeOpenAIServer, Scripted
from unified_kg_rag.bootstrap import build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.identity import entity_id
from unified_kg_rag.ingestion.report import IndexReport

pytestmark = pytest.mark.integration

KYOTO = "Kyoto University is"  # the marker of kyoto.txt's extraction prompt
CHAT = "/chat/completions"


def _extractions(server: FakeOpenAIServer, marker: str) -> int:
    """Extraction prompts (not gleaning) sent for the unit whose text holds ``marker``."""
    return sum(marker in p and "<current_items>" not in p and "<report_context>" not in p
               for p in _chat_calls(server))


async def _runs(config: UkrConfig, project: Path, corpus: Path, n: int,
                between: Any = None) -> list[tuple[IndexReport, set[str]]]:
    """Run the pipeline ``n`` times; after each, which of five entities are stored."""
    out = []
    async with build_app(config, project) as app:
        for i in range(n):
            if between is not None:
                between(i)
            report = await _run(app, [corpus])
            wanted = {entity_id(name): name for name in (
                "Kyoto University", "Kyoto", "Hideki Yukawa", "Ada Lovelace", "Charles Babbage")}
            stored = await app.index().graph.get_entities(list(wanted))
            out.append((report, {wanted[e.id] for e in stored}))
    return out


def test_a_reply_cut_by_the_content_filter_is_asked_again_until_it_is_complete(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")
    entities, _ = ITEMS[KYOTO]
    # the filter cut the reply after two entities: no Yukawa, no relationship
    partial = "<entities>\n" + _xml(entities[:2], []).split("<entities>\n")[1].split(
        "</entities>")[0]
    with FakeOpenAIServer(reply=reply) as server:
        server.script(Scripted(reply=partial, finish_reason="content_filter", match=KYOTO,
                               path=CHAT, times=2))
        counts: list[int] = []
        runs = asyncio.run(_runs(_config(server), tmp_path / "p", corpus, 3,
                                 between=lambda _: counts.append(_extractions(server, KYOTO))))
        counts.append(_extractions(server, KYOTO))
        calls = _chat_calls(server)
    (first, names1), (second, _), (third, names3) = runs
    assert first.graph is not None and second.graph is not None and third.graph is not None
    assert first.exit_code == 3 and not first.graph.error
    [failed] = first.graph.units_failed
    assert failed.path == "kyoto.txt" and failed.failures == 1
    assert "content filter" in failed.reason and "'content_filter'" in failed.reason
    # the items before the cut are in this run's graph; the rest of the corpus too
    assert {"Kyoto University", "Kyoto", "Ada Lovelace", "Charles Babbage"} <= names1
    assert "Hideki Yukawa" not in names1
    # the second run asks again for that unit alone (the filter cuts it again)
    assert counts[1] - counts[0] == 1 and counts[2] - counts[1] == 1
    assert second.graph.units_extracted == 1 and second.graph.records_reused == 3
    assert second.exit_code == 3 and second.graph.units_failed[0].failures == 2
    # the third run gets the whole reply: the graph is whole and the run succeeds
    assert third.exit_code == 0 and third.graph.complete and third.graph.units_extracted == 1
    assert "Hideki Yukawa" in names3 and third.graph.entities == 7
    # a cut reply is not gleaned (the unit is asked again anyway)
    assert sum(KYOTO in p and "<current_items>" in p for p in calls) == 1


def test_a_cut_report_and_a_cut_summary_fail_for_now_and_are_asked_again(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")
    report_json = json.dumps({"title": "Cut short", "summary": "About Kyoto", "rating": 5,
                              "findings": []})
    with FakeOpenAIServer(reply=reply) as server:
        server.script(Scripted(reply=report_json, finish_reason="length",
                               match=",Hideki Yukawa,", path=CHAT))
        (first, _), (second, _) = asyncio.run(_runs(_config(server), tmp_path / "p", corpus, 2))
    assert first.graph is not None and second.graph is not None
    assert first.graph.reports_failed == 1 and first.exit_code == 3
    assert second.graph.reports_failed == 0 and second.exit_code == 0 and second.graph.complete

    async def description(config: UkrConfig, project: Path) -> list[tuple[IndexReport, str]]:
        out = []
        async with build_app(config, project) as app:
            for _ in range(2):
                report = await _run(app, [corpus])
                ada = (await app.index().graph.get_entities([entity_id("Ada Lovelace")]))[0]
                out.append((report, ada.description))
        return out

    with FakeOpenAIServer(reply=reply) as server:
        config = _config(server)
        config = config.model_copy(update={"graph": config.graph.model_copy(update={
            "resolution": config.graph.resolution.model_copy(
                update={"summarize_over_tokens": 5})})})  # fmt: skip
        server.script(Scripted(reply="Ada Lovelace was a math", finish_reason="length",
                               match="Write one description of Ada Lovelace in", path=CHAT))
        (cut, kept), (again, summary) = asyncio.run(description(config, tmp_path / "q"))
    assert cut.graph is not None and again.graph is not None
    # the cut summary is not stored as the description: the concatenation is kept
    assert cut.graph.summaries_failed == 1 and "Ada Lovelace was a math" not in kept
    assert "A mathematician." in kept and not cut.graph.complete
    # asked again by the next run (not served from the response cache)
    assert again.graph.summaries_failed == 0 and summary == "A merged summary."


@pytest.mark.parametrize(
    "failure",
    [Scripted(delay_s=1.0, match=KYOTO, path=CHAT, times=None),
     Scripted(status=503, message="overloaded", match=KYOTO, path=CHAT, times=None)],
    ids=["timeout", "http-503"],
)
def test_one_unit_whose_calls_keep_failing_fails_alone_and_is_retried_next_run(
    tmp_path: Path, failure: Scripted
) -> None:
    corpus = write_docs(tmp_path / "corpus")
    with FakeOpenAIServer(reply=reply) as server:
        config = _config(server, max_retries=1, openai={"timeout_s": 0.3})
        server.script(failure)

        def heal(i: int) -> None:
            if i == 1:
                with server._lock:
                    server._queue.clear()

        (first, names1), (second, names2) = asyncio.run(
            _runs(config, tmp_path / "p", corpus, 2, between=heal))
        kyoto_calls = _extractions(server, KYOTO)
    assert first.graph is not None and second.graph is not None
    assert not first.graph.error and first.exit_code == 3
    assert [f.path for f in first.graph.units_failed] == ["kyoto.txt"]
    assert first.graph.units_extracted == 3 and first.graph.entities == 4
    assert {"Ada Lovelace", "Charles Babbage"} <= names1 and "Kyoto" not in names1
    # the next run retries that unit only, and the graph is whole
    assert second.graph.units_extracted == 1 and second.graph.records_reused == 3
    assert second.exit_code == 0 and second.graph.complete and "Hideki Yukawa" in names2
    assert kyoto_calls == 2 + 1  # a call and its retry on the first run, one call on the second


def test_a_server_that_fails_every_call_still_stops_the_stage(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")
    with FakeOpenAIServer(reply=reply) as server:
        server.script(Scripted(status=503, message="down for maintenance", path=CHAT,
                               times=None))
        [(report, names)] = asyncio.run(_runs(_config(server, max_retries=1), tmp_path / "p",
                                              corpus, 1))
        probes = sum("Reply with the single word OK." in p for p in _chat_calls(server))
    assert report.graph is not None and report.exit_code == 1
    assert "HTTP 503" in report.graph.error and "known-good request failed too" in (
        report.graph.error)
    assert report.graph.units_failed == [] and names == set()
    assert probes == 2  # one known-good request (and its one retry)


def test_one_report_whose_calls_keep_failing_fails_alone(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")
    with FakeOpenAIServer(reply=reply) as server:
        server.script(Scripted(status=503, match=",Hideki Yukawa,", path=CHAT, times=None))
        [(report, names)] = asyncio.run(_runs(_config(server, max_retries=1), tmp_path / "p",
                                              corpus, 1))
    assert report.graph is not None and not report.graph.error
    assert report.graph.reports_failed == 1 and report.graph.reports >= 1
    assert report.exit_code == 3 and "Hideki Yukawa" in names


def _ada_extraction(body: dict[str, Any]) -> bool:
    text = _user(body)
    return "Ada Lovelace worked" in text and "<current_items>" not in text


BAD_EXTRACTIONS: dict[str, tuple[str, bool]] = {
    # name: (the reply to Ada's extraction, whether the unit's own items survive)
    "lone-surrogate": (_xml([("Ada Lovelace", "PERSON", "A mathematician \ud83d.")], []), True),
    "nul": (_xml([("Ada Lovelace", "PERSON", "A math\x00ematician.")], []), True),
    "giant-tail": (_xml([("Ada Lovelace", "PERSON", "A mathematician.")], [])
                   + "\n" + "All done. " * 400_000, True),
    "punctuation-names": ("<entities><entity><name>...</name></entity><entity><name> — "
                          "</name></entity></entities><relationships>None</relationships>",
                          False),
    "nan-and-huge-scores": (
        "<entities><entity><name>Ada Lovelace</name><confidence>NaN</confidence></entity>"
        "<entity><name>London</name><confidence>1e999</confidence></entity></entities>"
        "<relationships><relationship><source>Ada Lovelace</source><target>London</target>"
        f"<strength>{'9' * 400}</strength></relationship>"
        "<relationship><source>London</source><target>Ada Lovelace</target>"
        "<strength>-inf</strength></relationship></relationships>", True),
    "unbalanced-xml": ("</relationships><entities><entity><name>Ada Lovelace</entities>"
                       "<entity><name>London</name></relationship></entities><relationships>"
                       "<relationship><source>Ada Lovelace", True),
}


@pytest.mark.parametrize("kind", list(BAD_EXTRACTIONS))
def test_one_bad_extraction_reply_fails_at_most_its_unit(tmp_path: Path, kind: str) -> None:
    corpus = write_docs(tmp_path / "corpus")
    bad, survives = BAD_EXTRACTIONS[kind]

    def answer(body: dict[str, Any]) -> str:
        return bad if _ada_extraction(body) else reply(body)

    with FakeOpenAIServer(reply=answer) as server:
        [(report, names)] = asyncio.run(_runs(_config(server), tmp_path / "p", corpus, 1))
    graph = report.graph
    assert graph is not None and not graph.error, graph
    assert {"Kyoto University", "Hideki Yukawa", "Charles Babbage"} <= names  # the others
    if survives:
        assert "Ada Lovelace" in names and report.exit_code == 0 and graph.complete
    else:
        assert [f.path for f in graph.units_failed] == ["ada.txt"] and report.exit_code == 3


BAD_REPORTS = {
    "huge-integer-rating": '{"title": "Kyoto", "summary": "s", "rating": 1' + "0" * 400 + "}",
    "deeply-nested": '{"title": "Kyoto", "findings": ' + "[" * 50_000 + "]" * 50_000 + "}",
    "lone-surrogate-escape": '{"title": "Kyoto \\ud800", "summary": "About \\udfff Kyoto"}',
    "nul-escape": '{"title": "Kyoto\\u0000", "summary": "About\\u0000 Kyoto"}',
}


@pytest.mark.parametrize("kind", list(BAD_REPORTS))
def test_one_bad_report_reply_fails_at_most_its_report(tmp_path: Path, kind: str) -> None:
    corpus = write_docs(tmp_path / "corpus")
    with FakeOpenAIServer(reply=reply) as server:
        server.script(Scripted(reply=BAD_REPORTS[kind], match=",Hideki Yukawa,", path=CHAT))
        [(report, names)] = asyncio.run(_runs(_config(server), tmp_path / "p", corpus, 1))
    graph = report.graph
    assert graph is not None and not graph.error, graph
    assert "Hideki Yukawa" in names and graph.reports >= 1
    assert graph.reports_failed <= 1 and report.exit_code in (0, 3)
    assert report.exit_code == (3 if graph.reports_failed else 0)



def test_a_bedrock_reply_stopped_by_a_guardrail_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION",
                 "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTESTING")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    corpus = write_docs(tmp_path / "corpus")
    entities, _ = ITEMS[KYOTO]
    partial = _xml(entities[:1], [])

    def answer(body: dict[str, Any]) -> str:  # the Converse body, read as the OpenAI one
        return reply({"messages": [
            {"role": m["role"], "content": " ".join(b.get("text", "") for b in m["content"])}
            for m in body.get("messages", [])]})

    with FakeBedrockServer(reply=answer) as server:
        config = UkrConfig.model_validate({
            "llm": {"kind": "bedrock", "retry_initial_s": 0.01, "retry_max_s": 0.05,
                    "bedrock": {"endpoint_url": server.endpoint_url, "region": "us-east-1"}},
            "graph": {"communities": {"min_community_size": 2}, "unit_concurrency": 1},
        })
        # one unit at a time, in path order: kyoto.txt's extraction is the fifth call (after
        # the extraction and gleaning of ada.txt and engine.txt)
        server.script(*[BedrockScripted() for _ in range(4)],
                      BedrockScripted(reply=partial, stop_reason="guardrail_intervened"))
        (first, names1), (second, names2) = asyncio.run(
            _runs(config, tmp_path / "p", corpus, 2))
    assert first.graph is not None and second.graph is not None
    [failed] = first.graph.units_failed
    assert failed.path == "kyoto.txt" and "'content_filter'" in failed.reason
    assert first.exit_code == 3 and "Kyoto University" in names1 and "Kyoto" not in names1
    assert second.exit_code == 0 and second.graph.units_extracted == 1
    assert {"Kyoto", "Hideki Yukawa"} <= names2
