"""``ukr index chat.db --source imessage --handles`` and ``ukr query`` over a message archive.

The archive is the synthetic iMessage corpus of `tests.support.chat_corpus` in its small
profile (every scripted message and golden question, 600 messages in all), written into a real
``chat.db`` (Apple's schema, its triggers installed so plain SQLite cannot write it). Real
embedder, real SQLite store, no LLM. The last test is the regression guard of the provenance
figures (`benchmarks/bench_messages.py` measures the full 10,000-message corpus).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests.support.chat_corpus import ChatCorpus, generate_chat_corpus, write_handles_yaml
from tests.support.chatdb import schema_available
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration

SCHEMA = "macos" if schema_available("macos") else "minimal"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[ChatCorpus, Path]:
    """The small corpus, indexed once for the module through the CLI."""
    work = tmp_path_factory.mktemp("chat")
    corpus = generate_chat_corpus(work / "chat.db", messages=600, threads=12, schema=SCHEMA)
    handles = write_handles_yaml(corpus, work / "handles.yaml")
    before = (corpus.path.read_bytes(), corpus.path.stat().st_mtime_ns)
    result = _ukr("index", str(corpus.path), "--source", "imessage", "--handles", str(handles),
                  "-C", str(work / "p"), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["messages"]["messages"] == corpus.messages
    assert report["messages"]["transcripts"] == report["documents_new"] > 0
    # the archive is read, never written
    assert (corpus.path.read_bytes(), corpus.path.stat().st_mtime_ns) == before
    return corpus, work / "p"


def _ukr(*args: str) -> Result:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("UKR_")}
    return CliRunner(env=env).invoke(app, list(args))


def test_query_shows_who_said_what_and_when(built: tuple[ChatCorpus, Path]) -> None:
    _corpus, project = built
    result = _ukr("query", "Who told me it was Dana's birthday?", "-C", str(project),
                  "-s", "naive")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Messages the answer rests on" in out
    # the evidence line names the sender (mapped by --handles), the time and the thread
    line = next(x for x in out.splitlines() if "Saturday is Dana's birthday" in x
                and "·" in x)
    assert "Priya Raman" in line and "2018-" in line


def test_query_json_names_the_messages_of_every_source(built: tuple[ChatCorpus, Path]) -> None:
    corpus, project = built
    question = next(q for q in corpus.questions if q.id == "rel-dana-birthday")
    result = _ukr("query", question.question, "-C", str(project), "-s", "naive", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["sources"] and all(s["messages"] for s in out["sources"])
    for s in out["sources"]:
        for m in s["messages"]:
            assert m["guid"] and m["sender_name"] and m["thread_name"] and m["label"]
    evidence = {m["guid"] for m in out["evidence"]}
    assert set(question.required_guids) <= evidence
    assert len(evidence) <= 4


def test_a_second_index_run_of_the_unchanged_archive_does_nothing(
    built: tuple[ChatCorpus, Path]
) -> None:
    corpus, project = built
    # no --handles: the names the index was built with are kept (nothing is renamed)
    result = _ukr("index", str(corpus.path), "-C", str(project), "--json")
    assert result.exit_code == 0, result.output
    m = json.loads(result.stdout)["messages"]
    assert m["new"] == m["changed"] == m["removed"] == 0 and m["unchanged"] == m["transcripts"]


def test_provenance_recall_and_cited_share_guard(built: tuple[ChatCorpus, Path]) -> None:
    """Regression guard: evidence per answer is a few messages and finds most required ones."""
    corpus, project = built
    recalls: list[float] = []
    shares: list[float] = []
    for q in corpus.questions:
        result = _ukr("query", q.question, "-C", str(project), "-s", "naive", "--json")
        assert result.exit_code == 0, result.output
        evidence = {m["guid"] for m in json.loads(result.stdout)["evidence"]}
        recalls.append(len(evidence & set(q.required_guids)) / len(q.required_guids))
        shares.append(len(evidence) / corpus.messages)
    recall, share = sum(recalls) / len(recalls), sum(shares) / len(shares)
    # measured 0.69 / 0.5% on this profile when written; the bar is recall >= 0.5
    # at under 2% of the corpus cited per answer
    assert recall >= 0.5, recall
    assert share < 0.02, share


def test_delete_drops_one_archive_of_two_through_the_cli(tmp_path: Path) -> None:
    """Found by the newcomer run: `ukr delete ARCHIVE` had no message sources to re-read the
    other archives with."""
    rows = [
        {"guid": "a1", "thread_id": "t", "sender": "Ann", "timestamp": "2021-05-01T10:00:00Z",
         "text": "The boat leaves at nine"},
        {"guid": "b1", "thread_id": "u", "sender": "Ben", "timestamp": "2021-06-01T10:00:00Z",
         "text": "Bring the blue tent"},
    ]
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    second.write_text(json.dumps(rows[1]) + "\n", encoding="utf-8")
    project = str(tmp_path / "p")
    assert _ukr("index", str(first), str(second), "-C", project).exit_code == 0
    dropped = _ukr("delete", str(second), "-C", project, "--yes", "--json")
    assert dropped.exit_code == 0, dropped.output
    report = json.loads(dropped.stdout)
    assert report["archives"]["documents_deleted"] == 1
    assert report["archives"]["messages"]["archives"] == 1
    again = _ukr("index", str(first), "-C", project, "--json")
    assert json.loads(again.stdout)["messages"]["unchanged"] == 1
    out = json.loads(_ukr("query", "tent", "-C", project, "-s", "naive", "--json").stdout)
    assert {m["guid"] for s in out["sources"] for m in s["messages"]} == {"a1"}


def test_handles_file_reads_every_scalar_as_text(tmp_path: Path) -> None:
    """Found by the break-it run: an unquoted +1555... lost its '+' (YAML integer) and a name
    `yes` became "True"; a handle named twice was resolved silently."""
    from unified_kg_rag.ingestion.message_plan import load_handles
    from unified_kg_rag.util.errors import InputError

    path = tmp_path / "handles.yaml"
    path.write_text("+15551234567: Bob\n'+1555000': yes\nAlice: [+1666, alice@x.com]\n",
                    encoding="utf-8")
    assert load_handles(path) == {"+15551234567": "Bob", "+1555000": "yes",
                                  "+1666": "Alice", "alice@x.com": "Alice"}
    path.write_text("+1666: Bob\nAlice: [+1666]\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"\+1666 is named twice"):
        load_handles(path)
    path.write_text("- just\n- a list\n", encoding="utf-8")
    with pytest.raises(InputError, match="mapping"):
        load_handles(path)
    bad = _ukr("index", str(tmp_path), "--handles", str(path), "-C", str(tmp_path / "p"))
    assert bad.exit_code != 0 and "handles.yaml" in bad.output


def test_a_lone_surrogate_in_an_archive_is_repaired_and_everything_indexed(
    tmp_path: Path,
) -> None:
    """Issue 15 item 6(a): one ``"\\ud83d"`` escape in a JSON Lines message text ended the
    run with exit 1 and nothing indexed, not even the other files."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "chat.jsonl").write_text(
        '{"guid": "a1", "thread_id": "t", "sender": "Ann", "timestamp": "2021-05-01T10:00:00Z",'
        ' "text": "The ferry \\ud83d leaves at nine"}\n'
        '{"guid": "a2", "thread_id": "t", "sender": "Ben", "timestamp": "2021-05-01T10:05:00Z",'
        ' "text": "Bring the blue tent"}\n', encoding="utf-8")
    (corpus / "other.jsonl").write_text(
        '{"guid": "b1", "thread_id": "u", "sender": "Cy", "timestamp": "2021-06-01T10:00:00Z",'
        ' "text": "The lighthouse opens in June"}\n', encoding="utf-8")
    (corpus / "notes.txt").write_text("Packing list: stove, lantern, rope.\n", encoding="utf-8")
    project = str(tmp_path / "p")
    result = _ukr("index", str(corpus), "-C", project)
    assert result.exit_code == 0, result.output
    assert ("chat.jsonl: line 1: invalid Unicode (a lone surrogate escape) in 'text' replaced "
            "by U+FFFD") in " ".join(result.stdout.split())
    status = json.loads(_ukr("status", "-C", project, "--json").stdout)
    assert status["indexes"][0]["documents"]["processed"] == 3  # 2 transcripts + notes.txt
    out = json.loads(_ukr("query", "ferry", "-C", project, "-s", "naive", "--json").stdout)
    texts = {m["guid"]: m["text"] for s in out["sources"] for m in s["messages"]}
    assert texts["a1"].endswith("Ann: The ferry \ufffd leaves at nine")
    assert "a2" in texts
    out = json.loads(_ukr("query", "lantern rope", "-C", project, "-s", "naive",
                          "--json").stdout)
    assert any(s["path"] == "notes.txt" for s in out["sources"])


def test_handles_file_and_owner_with_invalid_unicode_fail_with_one_line(tmp_path: Path) -> None:
    """Issue 15 item 6, the handles file and ``--owner``: a name written as a lone surrogate
    escape passed, and the run died writing the transcript (UnicodeEncodeError, exit 1); a
    byte that is not UTF-8 was reported as "not a YAML file" with a codec message."""
    from unified_kg_rag.ingestion.message_plan import load_handles
    from unified_kg_rag.util.errors import InputError

    path = tmp_path / "handles.yaml"
    path.write_text('"+1555": "Bob \\ud83d"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"^.*handles\.yaml: \+1555: the name holds text that "
                       r"is not valid Unicode"):
        load_handles(path)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "chat.jsonl").write_text(
        '{"guid": "a1", "thread_id": "t", "sender": "+1555", "text": "hello"}\n',
        encoding="utf-8")
    bad = _ukr("index", str(corpus), "--handles", str(path), "-C", str(tmp_path / "p"))
    assert bad.exit_code == 3, bad.output
    assert "handles.yaml: +1555: the name holds text that is not valid Unicode" in " ".join(
        bad.output.split())
    path.write_bytes(b'"+1555": Bob\xe9\n')
    with pytest.raises(InputError, match=r"not UTF-8 text \(bad byte 0xe9 at offset 12\)$"):
        load_handles(path)
    owner = _ukr("index", str(corpus), "--owner", "Sam\udce9", "-C", str(tmp_path / "p"))
    assert owner.exit_code == 2, owner.output
    assert "--owner: holds text that is not valid Unicode" in " ".join(owner.output.split())


def test_offset_less_timestamps_follow_messages_timezone_end_to_end(tmp_path: Path) -> None:
    """Issue 15 item 9: with ``messages.timezone`` set, an offset-less JSON Lines timestamp
    was read as UTC, so a message written at 00:30 local time was shown the evening before and
    landed in the previous thread-day. Changing the zone afterwards keeps the shown local
    times (same text) but moves the instants: the stored provenance follows."""
    archive = tmp_path / "chat.jsonl"
    archive.write_text("".join(json.dumps(r) + "\n" for r in [
        {"guid": "late", "thread_id": "t", "sender": "Ann", "timestamp": "2024-03-01T23:50:00",
         "text": "Still at the harbour office"},
        {"guid": "night", "thread_id": "t", "sender": "Ben", "timestamp": "2024-03-02T00:30:00",
         "text": "The night ferry just docked"},
    ]), encoding="utf-8")
    project = tmp_path / "p"
    project.mkdir()
    (project / "ukr.yaml").write_text("messages:\n  timezone: America/New_York\n",
                                      encoding="utf-8")
    first = _ukr("index", str(archive), "-C", str(project), "--json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["messages"]["transcripts"] == 1

    def night() -> dict[str, str]:
        out = json.loads(_ukr("query", "night ferry docked", "-C", str(project), "-s", "naive",
                              "--json").stdout)
        source = next(s for s in out["sources"] if any(m["guid"] == "night"
                                                       for m in s["messages"]))
        message = next(m for m in source["messages"] if m["guid"] == "night")
        return {"path": source["path"], "text": message["text"],
                "timestamp": message["timestamp"]}

    # the days of the thread are 03-01 and 03-02 (read as UTC, both were 03-01 in New York)
    assert night() == {"path": "t::2024-03-01..2024-03-02",
                       "text": "[2024-03-02 00:30] Ben: The night ferry just docked",
                       "timestamp": "2024-03-02T05:30:00+00:00"}
    (project / "ukr.yaml").write_text("messages:\n  timezone: Asia/Tokyo\n", encoding="utf-8")
    second = json.loads(_ukr("index", str(archive), "-C", str(project), "--json").stdout)
    m = second["messages"]
    assert (m["unchanged"], m["provenance_updated"], m["new"], m["changed"]) == (1, 1, 0, 0)
    assert night() == {"path": "t::2024-03-01..2024-03-02",
                       "text": "[2024-03-02 00:30] Ben: The night ferry just docked",
                       "timestamp": "2024-03-01T15:30:00+00:00"}


def test_edited_and_unsent_imessages_end_to_end(tmp_path: Path) -> None:
    """Issue 15 item 10: an edited message is marked as edited in its transcript and in the
    answer's evidence (with its earlier text), an unsent one is counted under its own reason,
    ``ukr index`` gives skipped rows per reason, and an attachment between two words leaves
    a space."""
    from tests.support.chatdb import (
        ChatDb,
        apple_nanos,
        apple_seconds,
        summary_info,
        typedstream_body,
    )

    when = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)
    path = tmp_path / "chat.db"
    db = ChatDb(path, SCHEMA)
    bob = db.handle("+15551230002")
    chat = db.chat("iMessage;-;+15551230002", handles=[bob])
    db.message("E1", text=None, body=typedstream_body("The budget meeting moved to Thursday"),
               chats=[chat], handle=bob, date=apple_nanos(when),
               date_edited=apple_nanos(when + timedelta(minutes=2)),
               summary=summary_info(edits={0: [
                   (apple_seconds(when), "The budget meeting moved to Tuesday"),
                   (apple_seconds(when + timedelta(minutes=2)),
                    "The budget meeting moved to Thursday")]}))
    db.message("U1", text=None, chats=[chat], handle=bob, date=apple_nanos(when),
               date_retracted=apple_nanos(when + timedelta(minutes=1)),
               summary=summary_info(unsent=[0]))
    db.message("A1", text="\ufffc", chats=[chat], is_from_me=True, has_attachments=True,
               date=apple_nanos(when + timedelta(minutes=3)))
    db.message("P1", text="see\ufffcthis lighthouse photo", chats=[chat], is_from_me=True,
               date=apple_nanos(when + timedelta(minutes=4)))
    db.close()
    project = str(tmp_path / "p")
    result = _ukr("index", str(path), "-C", project)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert "2 messages (0 in several archives, 2 rows skipped, 0 reactions folded)" in flat
    assert "rows skipped 1 attachment only, 1 unsent" in flat
    report = json.loads(_ukr("index", str(path), "-C", project, "--json").stdout)
    assert report["messages"]["skipped_reasons"] == {"attachment only": 1, "unsent": 1}

    out = json.loads(_ukr("query", "When is the budget meeting?", "-C", project, "-s",
                          "naive", "--json").stdout)
    edited = next(m for m in out["evidence"] if m["guid"] == "E1")
    assert edited["edited"] is True
    assert edited["edited_at"] == "2024-05-06T09:02:00+00:00"
    assert [e["text"] for e in edited["edits"]] == ["The budget meeting moved to Tuesday"]
    assert edited["text"] == ("[2024-05-06 09:00] +15551230002: The budget meeting moved to "
                              "Thursday\n    (edited 2024-05-06 09:02)")
    shown = _ukr("query", "When is the budget meeting?", "-C", project, "-s", "naive")
    assert "moved to Thursday (edited 2024-05-06 09:02)" in " ".join(shown.stdout.split())
    photo = json.loads(_ukr("query", "lighthouse photo", "-C", project, "-s", "naive",
                            "--json").stdout)
    texts = [m["text"] for s in photo["sources"] for m in s["messages"]]
    assert "[2024-05-06 09:04] Me: see this lighthouse photo" in texts
