"""The Ask view in a real browser (the system's chromium) against `ukr serve` (issue 18):
follow-ups, a passage opened in its document, message evidence and its thread-day, errors
shown as clear messages, and axe-core's serious and critical findings (none allowed).

Skipped when playwright or chromium is absent; without ``axe-playwright-python`` the axe
checks are left out with a warning and the rest runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.chat_corpus import index_chat_corpus
from tests.support.chatdb import schema_available
from tests.support.server import index_good_docs, serving
from tests.support.web import serious_findings

pytestmark = pytest.mark.integration

KEY = "web-ask-test-key"
SCHEMA = "macos" if schema_available("macos") else "minimal"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, archive: Path) -> Path:
    """Three small documents, indexed (before `browser`: indexing runs its own event loop,
    so the message archive is indexed first too)."""
    pytest.importorskip("uvicorn")
    folder = tmp_path_factory.mktemp("web-ask")
    index_good_docs(folder)
    return folder


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic iMessage corpus (scripted messages and some filler), indexed by the CLI."""
    pytest.importorskip("uvicorn")
    return index_chat_corpus(tmp_path_factory.mktemp("web-chat"), schema=SCHEMA)[1]


def _page(browser: Any) -> tuple[Any, list[str]]:
    page = browser.new_page()
    page.set_default_timeout(90_000)  # a loaded machine: each wait ends on its event anyway
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page, errors


def _ask(page: Any, question: str, turn: int) -> Any:
    """Ask ``question``; wait for the answer of turn ``turn`` (1-based); return its item."""
    page.get_by_role("textbox", name="question").fill(question)  # "Question" or "Follow-up question"
    page.get_by_role("button", name="Ask", exact=True).click()
    item = page.locator(".turn").nth(turn - 1)
    item.locator(".answer[data-state=done]").wait_for(timeout=120_000)
    return item


def test_a_follow_up_sends_the_history_and_shows_under_the_first_answer(
    project: Path, browser: Any, web_artifacts: Path
) -> None:
    from unified_kg_rag.service.app import create_app

    with serving(create_app(project, environ={})) as url:
        page, errors = _page(browser)
        sent: list[dict[str, Any]] = []
        page.on("request", lambda r: sent.append(json.loads(r.post_data or "{}"))
                if r.url.endswith("/v1/query") else None)  # fmt: skip
        page.goto(url + "/")
        page.get_by_label("naive", exact=True).check()
        assert serious_findings(page) == ""  # idle
        first = _ask(page, "What do barn owls hunt?", 1)
        assert "voles" in first.locator(".answer-text").inner_text()
        second = _ask(page, "And where do they nest?", 2)
        assert sent[0].get("history") is None
        assert sent[1]["history"] == [{"question": "What do barn owls hunt?",
                                       "answer": first.locator(".answer-text").inner_text()}]
        # no chat model: the fallback rewrite, shown under the follow-up
        assert "What do barn owls hunt? And where do they nest?" in second.locator(
            ".rewritten").inner_text()
        assert page.locator(".turn").count() == 2
        assert first.bounding_box()["y"] < second.bounding_box()["y"]
        assert page.get_by_label("Follow-up question").is_visible()
        # the context the model saw, per source, with the context's size
        context = second.locator(".context")
        assert "exactly the context" in context.inner_text()
        assert serious_findings(page) == ""  # with answers
        page.screenshot(path=str(web_artifacts / "ask.png"), full_page=True)
        # the index has the lazy concept graph: an answer can be shown in the Graph view
        first.get_by_role("button", name="Show in graph").click()
        page.get_by_role("link", name="Graph").and_(page.locator("[aria-current=page]")).wait_for()
        assert page.evaluate("location.hash").startswith("#graph") and "trace=1" in page.evaluate(
            "location.hash")
        # these three short documents share no concept: the trace says why it draws nothing
        notes = page.locator(".trace-notes")
        notes.wait_for()
        assert "Nothing of the answer's context is in this graph" in notes.inner_text()
        assert "states no node of the concepts graph" in notes.inner_text()
        page.go_back()
        second.locator(".answer[data-state=done]").wait_for()  # the conversation was kept
        assert page.locator(".turn").count() == 2
        page.get_by_role("button", name="New conversation").click()
        assert page.locator(".turn").count() == 0
        assert page.get_by_label("Question", exact=True).is_visible()
        assert errors == []
        page.close()


def test_query_options_are_sent_and_a_bad_one_is_named(project: Path, browser: Any) -> None:
    from unified_kg_rag.service.app import create_app

    with serving(create_app(project, environ={})) as url:
        page, errors = _page(browser)
        sent: list[dict[str, Any]] = []
        page.on("request", lambda r: sent.append(json.loads(r.post_data or "{}"))
                if r.url.endswith("/v1/query") else None)  # fmt: skip
        page.goto(url + "/")
        page.get_by_label("naive", exact=True).check()
        page.get_by_text("Query options").click()
        page.get_by_label("Sources per type (top_k)").fill("0")
        page.get_by_label("Question", exact=True).fill("What do barn owls hunt?")
        assert page.get_by_role("alert").inner_text().startswith("Sources per type must be")
        assert page.get_by_role("button", name="Ask", exact=True).is_disabled()
        page.get_by_label("Sources per type (top_k)").fill("1")
        page.get_by_label("Answer style").select_option("concise")
        item = _ask(page, "What do barn owls hunt?", 1)
        assert sent[0]["top_k"] == 1 and sent[0]["answer_style"] == "concise"
        assert item.locator(".source").count() == 1
        assert errors == []
        page.close()


def test_a_source_opens_at_its_passage_in_the_document(
    project: Path, browser: Any, web_artifacts: Path
) -> None:
    from unified_kg_rag.service.app import create_app

    with serving(create_app(project, environ={})) as url:
        page, errors = _page(browser)
        page.goto(url + "/")
        page.get_by_label("naive", exact=True).check()
        item = _ask(page, "What do barn owls hunt?", 1)
        source = item.locator(".source.cited").filter(has_text="voles").first
        source.locator("summary").click()
        placed = source.locator(".passage").inner_text()
        source.get_by_role("button", name="in its document").click()
        dialog = page.get_by_role("dialog")
        dialog.locator("mark").first.wait_for()
        assert dialog.locator("mark").inner_text().strip() == placed.strip()
        assert dialog.locator("mark").is_visible()  # scrolled into view
        assert "Source [" in dialog.get_by_role("heading").inner_text()
        assert serious_findings(page) == ""  # with the viewer open
        page.screenshot(path=str(web_artifacts / "passage.png"))
        page.keyboard.press("Escape")
        dialog.wait_for(state="hidden")
        assert page.get_by_role("dialog").count() == 0
        assert errors == []
        page.close()


def test_message_evidence_opens_its_thread_day(
    archive: Path, browser: Any, web_artifacts: Path
) -> None:
    from unified_kg_rag.service.app import create_app

    with serving(create_app(archive, environ={})) as url:
        page, errors = _page(browser)
        page.goto(url + "/")
        page.get_by_label("naive", exact=True).check()
        item = _ask(page, "Who told me it was Dana's birthday?", 1)
        evidence = item.locator(".evidence")
        assert "Messages the answer rests on" in evidence.inner_text()
        line = evidence.locator(".message").filter(has_text="Dana").first
        assert "Priya Raman" in line.inner_text() and "UTC" in line.inner_text()
        group = evidence.locator(".evidence-group").filter(has_text="Dana").first
        group.get_by_role("button", name="Open the thread-day").click()
        dialog = page.get_by_role("dialog")
        focus = dialog.locator(".message.focus")
        focus.wait_for()
        assert dialog.locator(".message").count() >= 2
        assert focus.is_visible()
        assert "Dana's birthday" in focus.inner_text()
        assert serious_findings(page) == ""
        page.screenshot(path=str(web_artifacts / "messages.png"), full_page=False)
        earlier = dialog.get_by_role("button", name="Earlier day")  # another day of the thread
        day = re.findall(r"\d{4}-\d{2}-\d{2}", earlier.inner_text())[-1]  # its last day
        earlier.click()
        dialog.get_by_role("heading", name=re.compile(day)).wait_for()
        assert dialog.locator(".message").count() >= 1
        assert dialog.locator(".message.focus").count() == 0
        dialog.get_by_role("button", name="Close").click()
        dialog.wait_for(state="hidden")
        assert errors == []
        page.close()


def test_a_wrong_key_and_a_gone_server_are_clear_messages(project: Path, browser: Any) -> None:
    from unified_kg_rag.service.app import create_app

    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(90_000)
    with serving(create_app(project, environ={"UKR_API_KEYS": f"{KEY}:read"})) as url:
        page.goto(url + "/")
        page.evaluate("sessionStorage.setItem('ukr.apiKey', 'wrong')")
        page.reload()
        page.get_by_text("The server refused this key").wait_for()
        assert "An API key is needed" in page.get_by_role("alert").first.inner_text()
        assert serious_findings(page) == ""  # the key form
        # a key pasted with an invisible character: said at once, not "cannot be reached"
        page.get_by_label("Key", exact=True).fill(KEY + "\u200b")
        page.get_by_role("button", name="Use this key").click()
        assert "characters a key cannot have" in page.locator(".key-form .problem").inner_text()
        assert page.evaluate("sessionStorage.getItem('ukr.apiKey')") == "wrong"  # not kept
        page.get_by_label("Key", exact=True).fill(KEY)
        page.get_by_role("button", name="Use this key").click()
        page.get_by_label("naive", exact=True).check()
        page.get_by_label("Question", exact=True).fill("What do barn owls hunt?")
    # the server stopped: asking says it cannot be reached
    page.get_by_role("button", name="Ask", exact=True).click()
    problem = page.locator(".turn .problem")
    problem.wait_for()
    assert "The server cannot be reached" in problem.inner_text()
    assert "cannot reach the server" in problem.inner_text()
    context.close()


def test_an_answer_in_flight_goes_on_while_another_view_is_shown(
    project: Path, browser: Any
) -> None:
    """Leave Ask while the first (cold) query runs, come back: its turn is there, answered,
    and the draft of the next question too."""
    from unified_kg_rag.service.app import create_app

    with serving(create_app(project, environ={})) as url:
        page, errors = _page(browser)
        page.goto(url + "/")
        page.get_by_label("naive", exact=True).check()
        page.get_by_label("Question", exact=True).fill("What do barn owls hunt?")
        page.get_by_role("button", name="Ask", exact=True).click()
        page.get_by_role("textbox", name="question").fill("And the bees?")  # a draft
        page.get_by_role("link", name="Corpus").click()
        page.get_by_role("heading", name="Add documents").wait_for()
        page.get_by_role("link", name="Ask").click()
        turn = page.locator(".turn")
        turn.locator(".answer[data-state=done]").wait_for(timeout=120_000)
        assert turn.count() == 1 and "voles" in turn.locator(".answer-text").inner_text()
        assert page.get_by_role("textbox", name="question").input_value() == "And the bees?"
        assert errors == []
        page.close()
