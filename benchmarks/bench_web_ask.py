"""The web UI's Ask view in headless chromium on the MuSiQue index: time to the first answer
token and to the full answer, as a user sees them (prints figures; issue 18).

The index is `bench_service`'s (LLM-free: MuSiQue's passages less 200, one a file; ``--base``
keeps it). ``ukr serve`` runs as a subprocess; the page is driven by playwright with the
system's chromium. Each question is asked in a new conversation; the clock starts at the
click on **Ask** (in the page) and stops when the answer's first characters are on screen
(*first token*) and when its sources and costs are shown (*full answer*).

Arms:

1. ``naive`` and ``ppr`` without a model: extractive answers (sent whole, so first token and
   full answer are close).
2. ``naive`` with a streaming model: a local OpenAI-compatible server on 127.0.0.1
   (`tests.support.openai_server`) that streams an answer of about 1,000 characters at about
   400 characters/s, with ``llm.reasoning_holdback_chars`` at its default (4,096: a short
   answer is held back whole, in case a lone ``</think>`` ends reasoning) and at 0.

Usage:  python benchmarks/bench_web_ask.py [--base DIR] [--questions 20]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_graph_index import DEFAULT_DATA  # noqa: E402
from benchmarks.bench_service import Server, build_base, prepare  # noqa: E402
from tests.service.conftest import chromium_binary  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer, Scripted  # noqa: E402

ANSWER = ("The passages say this in several steps. " * 6 + "The answer rests on [1] and [2]. ") * 4
"""The streamed model's answer (about 1,100 characters)."""

WATCH = """() => {
  const t = { start: null, first: null, done: null };
  window.__ukrTimes = t;
  document.addEventListener("click", () => { t.start = performance.now(); },
                            { capture: true, once: true });
  const seen = () => {
    const turns = document.querySelectorAll(".turn");
    const last = turns[turns.length - 1];
    if (!last || t.start === null) return;
    const text = last.querySelector(".answer-text");
    if (t.first === null && text && text.textContent.trim()) t.first = performance.now();
    if (t.done === null && last.querySelector(".answer[data-state=done]")) {
      t.done = performance.now();
      if (t.first === null) t.first = t.done;
      observer.disconnect();
    }
  };
  const observer = new MutationObserver(seen);
  observer.observe(document.body, { subtree: true, childList: true, characterData: true,
                                    attributes: true });
}"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ask_all(url: str, strategy: str, questions: list[str]) -> tuple[list[float], list[float]]:
    """(first-token ms, full-answer ms) per question, asked through the page."""
    from playwright.sync_api import sync_playwright

    firsts: list[float] = []
    fulls: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_binary(), headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(180_000)
        page.goto(url + "/#ask")
        page.get_by_label(strategy, exact=True).check()
        for question in questions:
            restart = page.get_by_role("button", name="New conversation")
            if restart.count() and restart.is_visible():
                restart.click()
            page.get_by_role("textbox", name="question").fill(question)
            page.evaluate(WATCH)
            page.get_by_role("button", name="Ask", exact=True).click()
            page.locator(".turn .answer[data-state=done]").last.wait_for()
            times: dict[str, Any] = page.evaluate("window.__ukrTimes")
            deadline = time.monotonic() + 10
            while times["done"] is None:  # the observer runs after the DOM change
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the page's clock saw no answer: {times}")
                time.sleep(0.01)
                times = page.evaluate("window.__ukrTimes")
            firsts.append(times["first"] - times["start"])
            fulls.append(times["done"] - times["start"])
        browser.close()
    return firsts, fulls


def report(name: str, firsts: list[float], fulls: list[float]) -> None:
    print(f"  {name:<34} first token p50 {statistics.median(firsts):7.0f} ms "
          f"p95 {pct(firsts, .95):7.0f}   full answer p50 {statistics.median(fulls):7.0f} ms "
          f"p95 {pct(fulls, .95):7.0f}   (n={len(fulls)})")  # fmt: skip


@contextmanager
def served(project: Path) -> Iterator[str]:
    server = Server(project, {"UKR_SERVICE__ACCESS_LOG": "false"})
    try:
        yield server.url
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, default=None,
                        help="where the base index is built (kept for later runs)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--questions", type=int, default=20)
    args = parser.parse_args()
    if chromium_binary() is None:
        raise SystemExit("no chromium binary (apt-get install chromium, or set UKR_CHROMIUM)")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        corpus, _, questions = prepare(args.data, tmp)
        questions = questions[: args.questions]
        base = args.base or tmp / "base"
        if not (base / ".ukr").exists():
            asyncio.run(build_base(corpus, base))
        project = tmp / "run"
        shutil.copytree(base, project)
        print(f"== MuSiQue, LLM-free index; {len(questions)} questions, one per conversation")
        print("== 1. extractive answers (no model)")
        with served(project) as url:
            ask_all(url, "naive", questions[:2])  # warm: models loaded, caches filled
            for strategy in ("naive", "ppr"):
                report(strategy, *ask_all(url, strategy, questions))
        print("== 2. a streaming model (local OpenAI-compatible server, ~400 chars/s)")
        with FakeOpenAIServer(reply=lambda _: ANSWER, stream_chunk_chars=4) as llm:
            llm.script(Scripted(reply=ANSWER, times=None, trickle_s=0.02, trickle_bytes=600))
            for holdback in (4096, 0):
                (project / "ukr.yaml").write_text(
                    f"llm:\n  kind: openai\n  cache: false\n  reasoning_holdback_chars: "
                    f"{holdback}\n  openai:\n    base_url: {llm.base_url}\n    api_key: k\n"
                    "    model: bench-model\n", encoding="utf-8")  # fmt: skip
                with served(project) as url:
                    ask_all(url, "naive", questions[:1])
                    report(f"naive, reasoning_holdback_chars {holdback}",
                           *ask_all(url, "naive", questions))  # fmt: skip


if __name__ == "__main__":
    main()
