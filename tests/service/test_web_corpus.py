"""The web app's Corpus view in a real browser (the system's chromium, `conftest.browser`)
against `ukr serve`: uploads followed to the end, deletion with confirmation, a 409 while a job
runs, a job already running when the view opens, a quarantined document retried, a message
archive listed as an archive. Skipped when playwright or chromium is absent."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.chatdb import ChatDb, apple_nanos
from tests.support.server import index_good_docs, serving
from tests.support.web import serious_findings

pytestmark = pytest.mark.integration

CONFIG = """\
indexing:
  batch_documents: 1
  quarantine_after: 1
"""

TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three small documents, indexed (before `browser`: indexing runs its own event loop);
    files to upload in ``to_upload/``: two notes, a binary file, an iMessage ``chat.db``."""
    pytest.importorskip("uvicorn")
    folder = tmp_path_factory.mktemp("web-corpus")
    (folder / "ukr.yaml").write_text(CONFIG, encoding="utf-8")
    index_good_docs(folder)
    up = folder / "to_upload"
    up.mkdir()
    (up / "herons.md").write_text("# Herons\n\nHerons wade in shallow water and spear fish.",
                                  encoding="utf-8")  # fmt: skip
    (up / "lanterns.txt").write_text("Paper lanterns float on the river at the autumn festival.",
                                     encoding="utf-8")  # fmt: skip
    (up / "bad.txt").write_bytes(b"\x00\x01\x02 binary \xff" * 50)
    db = ChatDb(up / "chat.db", schema="minimal")
    ann = db.handle("+15550001111")
    chat = db.chat("iMessage;-;+15550001111", handles=[ann])
    for i, text in enumerate(["The ferry leaves at nine", "Bring the blue tent"]):
        when = datetime(2021, 5, 1 + i, 10, tzinfo=UTC)
        db.message(f"G{i}", text=text, chats=[chat], handle=ann, date=apple_nanos(when))
    db.close()
    return folder


@pytest.fixture(scope="module")
def url(project: Path) -> Iterator[str]:
    from unified_kg_rag.service.app import create_app

    with serving(create_app(project, environ={})) as base:
        yield base


@pytest.fixture
def page(url: str, browser: Any) -> Iterator[Any]:
    """The Corpus view, its page errors asserted to be none at the end."""
    opened = browser.new_page(viewport={"width": 1200, "height": 900})
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.goto(url + "/#corpus")
    opened.wait_for_selector(".doc-table", timeout=TIMEOUT_MS)
    yield opened
    opened.close()
    assert errors == []


def ended(page: Any, previous: str = "none") -> str:
    """Wait for the job panel to show an ended job other than ``previous``; return its state."""
    page.wait_for_selector(f".job:not([data-job='{previous}']):not([data-state=queued])"
                           ":not([data-state=running])", timeout=TIMEOUT_MS)  # fmt: skip
    return str(page.get_attribute(".job", "data-state"))


def row(page: Any, path: str) -> Any:
    quoted = path.replace("\\", "\\\\").replace('"', '\\"')
    return page.locator(f'tr.doc-row[data-path="{quoted}"]')


def test_two_files_uploaded_by_the_file_input_are_followed_to_the_end(
    page: Any, project: Path
) -> None:
    page.get_by_label("Choose files").set_input_files(
        [str(project / "to_upload" / "herons.md"), str(project / "to_upload" / "lanterns.txt")])
    assert ended(page) == "succeeded"
    assert page.get_attribute(".job progress", "value") == "100"
    assert page.inner_text(".job-percent") == "100%"
    assert "2 new" in page.inner_text(".job-line")
    for name in ("herons.md", "lanterns.txt"):
        size = f"{(project / 'to_upload' / name).stat().st_size} B"
        page.wait_for_selector(f'tr.doc-row[data-path="{name}"]', timeout=TIMEOUT_MS)
        cells = row(page, name).locator("td")
        assert cells.nth(0).inner_text() == "processed"
        assert cells.nth(1).inner_text() == size
        assert cells.nth(2).inner_text() == "1"


def test_names_from_the_server_are_shown_as_text_never_markup(page: Any) -> None:
    name = "<img src=x onerror=window.pwned=1>.md"  # a browser sends a quote as %22
    page.get_by_label("Choose files").set_input_files(
        [{"name": name, "mimeType": "text/markdown", "buffer": b"Owls <b>hoot</b>."}])
    assert ended(page) == "succeeded"
    row(page, name).wait_for(timeout=TIMEOUT_MS)
    assert row(page, name).locator("th").inner_text().startswith(name)
    assert page.locator(".doc-table img, .doc-table b").count() == 0
    assert page.evaluate("window.pwned") is None


def test_a_document_is_deleted_after_confirming(page: Any) -> None:
    page.get_by_label("Choose files").wait_for()
    row(page, "ships.md").wait_for()
    page.get_by_role("button", name="Delete ships.md").click()
    dialog = page.locator("dialog.confirm")
    dialog.wait_for()
    assert "ships.md" in dialog.inner_text()
    dialog.get_by_role("button", name="Cancel").click()
    dialog.wait_for(state="hidden")
    assert row(page, "ships.md").count() == 1
    page.get_by_role("button", name="Delete ships.md").click()
    dialog.wait_for()
    dialog.get_by_role("button", name="Delete", exact=True).click()
    assert ended(page) == "succeeded"
    assert "1 document deleted" in page.inner_text(".job-line")
    row(page, "ships.md").wait_for(state="detached", timeout=TIMEOUT_MS)


def test_a_409_while_a_job_runs_is_a_clear_message_and_the_job_is_shown_on_opening(
    page: Any, project: Path, url: str, browser: Any
) -> None:
    from unified_kg_rag.service.job_store import Job, JobStore

    store = JobStore(project)
    held = Job(id="feedc0ffee42", kind="index", index="default", state="running")
    store.claim(held)  # what a job started by another worker looks like: it holds the index
    with sqlite3.connect(store.path) as db:  # its worker's heartbeat never lapses meanwhile
        db.execute("UPDATE jobs SET heartbeat_at = ? WHERE id = ?", (time.time() + 3600, held.id))
    try:
        page.get_by_label("Choose files").set_input_files(str(project / "to_upload" / "bad.txt"))
        alert = page.get_by_role("alert")
        alert.wait_for(timeout=TIMEOUT_MS)
        text = alert.inner_text()
        assert "The index cannot do that now" in text and "JobConflictError" in text
        assert held.id in text
        second = browser.new_page()
        second.goto(url + "/#corpus")
        second.wait_for_selector(f".job[data-job='{held.id}'][data-state=running]",
                                 timeout=TIMEOUT_MS)  # fmt: skip
        assert second.get_by_label("Choose files").is_disabled()
        held.state, held.summary = "succeeded", "1 document found: 0 new"
        store.save(held)  # its worker ends it: the open view follows it to the end
        second.wait_for_selector(f".job[data-job='{held.id}'][data-state=succeeded]",
                                 timeout=TIMEOUT_MS)  # fmt: skip
        assert second.get_by_label("Choose files").is_enabled()
        second.close()
    finally:
        held.state = "succeeded"
        store.save(held)


def test_a_quarantined_document_is_marked_and_retried(
    page: Any, project: Path, web_artifacts: Path
) -> None:
    page.get_by_label("Choose files").set_input_files(str(project / "to_upload" / "bad.txt"))
    assert ended(page) == "succeeded"
    assert "bad.txt" in page.inner_text(".job-failures")
    row(page, "bad.txt").locator(".status-quarantined").wait_for(timeout=TIMEOUT_MS)
    page.locator(".quarantine").filter(has_text="bad.txt").wait_for(timeout=TIMEOUT_MS)
    page.screenshot(path=str(web_artifacts / "corpus-quarantined.png"), full_page=True)
    (project / "uploads" / "default" / "bad.txt").write_text("Kingfishers dive for fish.")
    first = page.get_attribute(".job", "data-job")
    row(page, "bad.txt").get_by_role("button", name="Retry bad.txt").click()
    assert ended(page, first) == "succeeded"
    row(page, "bad.txt").locator(".status-processed").wait_for(timeout=TIMEOUT_MS)
    page.locator(".quarantine").wait_for(state="detached", timeout=TIMEOUT_MS)


def test_a_dropped_file_is_uploaded_and_a_reset_is_confirmed_first(page: Any) -> None:
    page.evaluate("""([name, text]) => {
        const files = new DataTransfer();
        files.items.add(new File([text], name, { type: "text/markdown" }));
        const zone = document.querySelector(".dropzone");
        for (const type of ["dragenter", "dragover", "drop"]) {
            zone.dispatchEvent(new DragEvent(type, { dataTransfer: files, bubbles: true,
                                                    cancelable: true }));
        }
    }""", ["dropped.md", "# Otters\n\nSea otters hold hands while they sleep."])
    assert ended(page) == "succeeded"
    row(page, "dropped.md").locator(".status-processed").wait_for(timeout=TIMEOUT_MS)
    dropped = page.get_attribute(".job", "data-job")
    # a lazy-only index: drift is measured on the entity graph, which it has not
    assert "No drift measured" in page.locator(".drift").inner_text()
    page.get_by_role("button", name="Reset index").click()
    dialog = page.locator("dialog.confirm")
    dialog.wait_for()
    assert "Reset index “default”?" in dialog.inner_text()
    dialog.get_by_role("button", name="Reset index").click()
    assert ended(page, dropped) == "succeeded"
    assert page.inner_text("#job-heading").startswith("Resetting “default”: done")
    assert row(page, "dropped.md").count() == 1


def test_a_message_archive_is_listed_as_an_archive(
    page: Any, project: Path, web_artifacts: Path
) -> None:
    page.get_by_label("Choose files").set_input_files(str(project / "to_upload" / "chat.db"))
    assert ended(page) == "succeeded"
    archive = page.locator("tr.archive-row")
    archive.wait_for(timeout=TIMEOUT_MS)
    assert archive.count() == 1
    text = archive.inner_text()
    assert "chat.db" in text and "message archive · imessage" in text
    assert "1 conversation, 1 thread-day document" in text
    assert row(page, "chat.db").count() == 0  # not listed as a file
    page.get_by_role("button", name="Show the conversations of chat.db").click()
    conversation = page.locator("tr.conversation-row")
    assert conversation.count() == 1 and "iMessage;-;+15550001111" in conversation.inner_text()
    conversation.get_by_role("button").click()
    days = page.locator("tr.doc-row.nested-2")
    assert days.count() == 1 and "2021-05-01" in days.inner_text()
    page.get_by_label("Path contains").fill("herons")
    assert page.locator("tr.archive-row").count() == 0 and row(page, "herons.md").count() == 1
    page.get_by_label("Path contains").fill("")
    page.get_by_label("Path contains").blur()
    assert serious_findings(page) == ""  # axe-core: the table, the archive rows, the filters
    page.screenshot(path=str(web_artifacts / "corpus.png"), full_page=True)
    assert (web_artifacts / "corpus.png").stat().st_size > 0
