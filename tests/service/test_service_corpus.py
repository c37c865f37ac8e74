"""What the web app's Corpus view reads and does over HTTP besides the job routes (issue 18):
document sizes, the message archives of an index, retrying a quarantined document."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.service.test_service_jobs import doc, upload, wait_end
from tests.support.server import index_good_docs, serving

pytestmark = pytest.mark.integration

uvicorn = pytest.importorskip("uvicorn")

CONFIG = """\
indexing:
  quarantine_after: 1
service:
  allowed_roots: [roots]
"""

BINARY = b"\x00\x01\x02 binary \xff" * 50


def archive_rows() -> bytes:
    rows = [
        {"guid": "a1", "thread_id": "boats", "sender": "Ann",
         "timestamp": "2021-05-01T10:00:00Z", "text": "The boat leaves at nine"},
        {"guid": "a2", "thread_id": "boats", "sender": "Ben",
         "timestamp": "2021-05-02T10:00:00Z", "text": "Bring the blue tent"},
    ]  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Three indexed documents; one failure quarantines a document."""
    from unified_kg_rag.service.app import create_app

    project = tmp_path_factory.mktemp("corpus")
    (project / "ukr.yaml").write_text(CONFIG, encoding="utf-8")
    (project / "roots" / "notes" / "deep").mkdir(parents=True)
    index_good_docs(project)
    with serving(create_app(project, environ={})) as url:
        yield url, project


def listed(url: str, prefix: str) -> list[dict[str, object]]:
    page = httpx.get(f"{url}/v1/documents", params={"path_prefix": prefix}).json()
    return list(page["documents"])


def test_documents_list_the_size_of_their_file_or_none_once_it_is_gone(
    served: tuple[str, Path],
) -> None:
    url, project = served
    job = upload(url, [("sized.md", doc(1)), ("gone.md", doc(2, sentences=3))]).json()
    assert wait_end(url, job["id"])["state"] == "succeeded"
    (project / "uploads" / "default" / "gone.md").unlink()
    sizes = {d["path"]: d["size_bytes"] for d in listed(url, "")}
    assert sizes["sized.md"] == len(doc(1))
    assert sizes["gone.md"] is None
    assert sizes["owls.md"] == (project / "docs" / "owls.md").stat().st_size


def test_message_archives_are_listed_and_their_transcripts_have_no_size(
    served: tuple[str, Path],
) -> None:
    url, project = served
    job = upload(url, [("chat.jsonl", archive_rows())]).json()
    assert wait_end(url, job["id"])["state"] == "succeeded"
    kept = (project / "uploads" / "default" / "chat.jsonl").resolve()
    assert httpx.get(f"{url}/v1/archives").json() == [
        {"path": kept.as_posix(), "source": "jsonl", "size_bytes": len(archive_rows())}]
    transcripts = [d for d in listed(url, "") if d["source_scope"] == "messages:"]
    assert [d["path"] for d in transcripts] == ["boats::2021-05-01..2021-05-02"]
    assert transcripts[0]["size_bytes"] is None and transcripts[0]["status"] == "processed"
    assert httpx.get(f"{url}/v1/archives", params={"index": "nope"}).json() == []


def test_a_quarantined_document_is_tried_again_by_retry(served: tuple[str, Path]) -> None:
    url, project = served
    first = wait_end(url, upload(url, [("bad.txt", BINARY)]).json()["id"])
    assert first["index_report"]["failed"][0]["quarantined"] is True
    (bad,) = listed(url, "bad.txt")
    assert bad["status"] == "quarantined" and bad["size_bytes"] == len(BINARY)
    reply = httpx.post(f"{url}/v1/documents/{str(bad['document_id'])[:10]}/retry")
    assert reply.status_code == 202, reply.text
    job = reply.json()
    assert job["inputs"]["retry_quarantined"] is True and job["inputs"]["uploads"] == ["bad.txt"]
    ended = wait_end(url, job["id"])
    assert ended["index_report"]["documents_released"] == 1
    assert ended["progress"]["failures"] == 1  # still binary: failed again, quarantined again
    (kept := project / "uploads" / "default" / "bad.txt").write_text("Herons fish at dawn.")
    fixed = wait_end(url, httpx.post(f"{url}/v1/documents/{bad['document_id']}/retry").json()[
        "id"])  # fmt: skip
    assert fixed["state"] == "succeeded" and fixed["progress"]["failures"] == 0
    (now,) = listed(url, "bad.txt")
    assert now["status"] == "processed" and now["text_units"] == 1
    kept.unlink()
    gone = httpx.post(f"{url}/v1/documents/{bad['document_id']}/retry")
    assert gone.status_code == 400 and gone.json()["error"]["field"] == "document"
    assert "no longer on disk" in gone.json()["error"]["message"]
    outside = httpx.post(f"{url}/v1/documents/{listed(url, 'owls.md')[0]['document_id']}/retry")
    assert outside.status_code == 400, outside.text  # docs/ is no allowed root
    assert outside.json()["error"]["field"] == "path"
    assert "below service.allowed_roots" in outside.json()["error"]["message"]
    unknown = httpx.post(f"{url}/v1/documents/feedfacecafe/retry")
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "NotFoundError"


def test_a_file_found_in_a_folder_is_retried_by_walking_that_folder_keeping_its_id(
    served: tuple[str, Path],
) -> None:
    url, project = served
    notes = project / "roots" / "notes"
    (notes / "fine.md").write_text("Kingfishers dive for fish.", encoding="utf-8")
    (notes / "deep" / "broken.txt").write_bytes(BINARY)
    job = httpx.post(f"{url}/v1/documents/path", json={"path": "roots/notes"}).json()
    assert wait_end(url, job["id"])["progress"]["failures"] == 1
    (broken,) = listed(url, "deep/")
    assert broken["status"] == "quarantined"
    (notes / "deep" / "broken.txt").write_text("Herons wade at dawn.", encoding="utf-8")
    retried = httpx.post(f"{url}/v1/documents/{broken['document_id']}/retry").json()
    assert retried["inputs"]["paths"] == [notes.resolve().as_posix()]
    assert retried["inputs"]["uploads"] == []
    assert wait_end(url, retried["id"])["state"] == "succeeded"
    (now,) = listed(url, "deep/")
    assert now["document_id"] == broken["document_id"] and now["status"] == "processed"
