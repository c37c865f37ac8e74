"""The HippoRAG replay model: real recorded extraction output served over the OpenAI wire format.

HippoRAG ships GPT-3.5-turbo-1106's OpenIE output for every passage of MuSiQue's training
corpus (``openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json``: per passage its
``extracted_entities`` and ``extracted_triples``). `ReplayModel` answers our prompts from it,
so the whole graph pipeline runs on real extraction output without a real model:

- extraction (a ``<text>`` block, no ``<current_items>``): the passage whose text the block
  holds, rendered in the XML record format (entities: type DATE for year/date-like names,
  else ENTITY; a description made of the triples that mention the name; confidence 8; the
  name as span when it occurs verbatim; relationships: one per 3-member triple, type the
  predicate in upper snake case, strength 7). An unknown text gets empty sections;
- gleaning (``<text>`` and ``<current_items>``): empty sections; with ``glean_adds`` one
  extra entity, unless ``<current_items>`` already lists it (so only the first round adds:
  the reply depends on the prompt alone, as a cacheable model's should);
- description summary (``<descriptions>``): the distinct fragments joined, cut to 60 words;
- community report (``<report_context>``): a JSON report built from the context's rows;
- anything else: ``"echo: <last user message>"``.

Matching a text unit to a passage tolerates the ``# {title}`` heading that ``ukr eval
prepare hipporag`` writes and any whitespace change: the unit's words are scanned for the
first 8 words of a passage, then the passage's whole text must occur in the unit. A unit
that holds only part of a passage (a long passage cut into several units) gets the whole
passage's record. Triples with other than 3 members are skipped, as HippoRAG does.
"""

from __future__ import annotations

import csv
import functools
import html
import json
import math
import re
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import FakeOpenAIServer

__all__ = [
    "DEFAULT_DATA_PATH",
    "RecordedPassage",
    "ReplayModel",
    "context_rows",
    "entity_type",
    "load_passages",
    "relationship_type",
    "render_record",
    "replay_model_of",
    "replay_reply",
    "replay_server",
    "report_json",
    "require_replay_data",
    "start_replay_server",
    "summarize",
]

DEFAULT_DATA_PATH = (
    Path(__file__).resolve().parents[2].parent / "shared" / "data" / "multihop" / "hipporag"
    / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"
)
"""``../shared/data/.../openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json``."""

_KEY_WORDS = 8
_SUMMARY_WORDS = 60
_TEXT_BLOCK = re.compile(r"<text>\n(.*?)\n</text>", re.DOTALL)
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|"
           "december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DATE = re.compile(
    rf"^(\d+s?|\d{{4}}-\d{{2}}(-\d{{2}})?|(\d{{1,2}}(st|nd|rd|th)? )?({_MONTHS})\.?"
    rf"( \d{{1,2}}(st|nd|rd|th)?,?)?( \d{{3,4}})?|(early |late |mid-?)\d{{2,4}}s)$",
    re.IGNORECASE,
)
_NOT_WORD = re.compile(r"[\W_]+")
_EMPTY = "<entities>\nNone\n</entities>\n<relationships>\nNone\n</relationships>\n"


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def _clean(value: object) -> str | None:
    """A recorded member as text: numbers via str(), NaN/None/blank dropped."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = _norm(str(value))
    return text or None


@dataclass(frozen=True)
class RecordedPassage:
    """One passage and what GPT-3.5 extracted from it (cleaned, duplicates removed)."""

    title: str
    text: str
    entities: tuple[str, ...]
    triples: tuple[tuple[str, str, str], ...]


def load_passages(data_path: Path) -> list[RecordedPassage]:
    """Read the OpenIE results file (bare NaN accepted) into `RecordedPassage` objects."""
    raw = json.loads(data_path.read_text(encoding="utf-8"))
    out: list[RecordedPassage] = []
    for doc in raw["docs"]:
        entities = [e for e in map(_clean, doc.get("extracted_entities") or []) if e]
        triples: list[tuple[str, str, str]] = []
        for triple in doc.get("extracted_triples") or []:
            if isinstance(triple, list) and len(triple) == 3:
                s, p, o = (_clean(m) for m in triple)
                if s and p and o:
                    triples.append((s, p, o))
        out.append(RecordedPassage(
            title=_norm(str(doc.get("title", ""))), text=_norm(str(doc.get("text", ""))),
            entities=tuple(dict.fromkeys(entities)), triples=tuple(dict.fromkeys(triples))))
    return out


def entity_type(name: str) -> str:
    """``DATE`` for digits-only, decade and date-like names (``January 1960``), else ``ENTITY``."""
    return "DATE" if _DATE.match(name) else "ENTITY"


def relationship_type(predicate: str) -> str:
    """The predicate in upper snake case (``published by`` → ``PUBLISHED_BY``)."""
    return _NOT_WORD.sub("_", predicate).strip("_").upper() or "RELATED_TO"


def _x(value: str) -> str:
    return html.escape(value, quote=False)


def _entity_xml(name: str, type_: str, description: str, confidence: int, span: str) -> str:
    return (f"<entity>\n<name>{_x(name)}</name>\n<type>{type_}</type>\n"
            f"<description>{_x(description)}</description>\n<confidence>{confidence}"
            f"</confidence>\n<span>{_x(span)}</span>\n</entity>")


def render_record(passage: RecordedPassage) -> str:
    """Render a passage's recorded entities and triples in the XML record format."""
    entities = []
    for name in passage.entities:
        key = name.casefold()
        facts = [f"{s} {p} {o}." for s, p, o in passage.triples
                 if key in (s.casefold(), o.casefold())]
        description = " ".join(dict.fromkeys(facts)) or name
        span = name if name in passage.text else ""
        entities.append(_entity_xml(name, entity_type(name), description, 8, span))
    relationships = [
        f"<relationship>\n<source>{_x(s)}</source>\n<target>{_x(o)}</target>\n"
        f"<type>{relationship_type(p)}</type>\n<description>{_x(f'{s} {p} {o}.')}"
        "</description>\n<strength>7</strength>\n<span></span>\n</relationship>"
        for s, p, o in passage.triples
    ]
    return (
        "<entities>\n" + ("\n".join(entities) or "None") + "\n</entities>\n"
        "<relationships>\n" + ("\n".join(relationships) or "None") + "\n</relationships>\n"
    )


class ReplayModel:
    """Answers extraction, gleaning, summary and report prompts from recorded output.

    Usable as the ``reply=`` callable of `FakeOpenAIServer` (thread-safe).

    Args:
        data_path: the OpenIE results JSON.
        glean_adds: the first gleaning round of a text adds one extra entity.
        latency_s: seconds each reply waits before it is sent (a latency-bound model:
            ``benchmarks/bench_ray_index.py`` uses 0.3).

    Attributes:
        passages: the recorded passages, in file order.
        calls: prompts answered per kind (``extraction``, ``gleaning``, ``summary``,
            ``report``, ``other``).
        unmatched: extraction and gleaning prompts whose text matched no passage.
    """

    def __init__(
        self, data_path: Path = DEFAULT_DATA_PATH, *, glean_adds: bool = False,
        latency_s: float = 0.0,
    ) -> None:
        self.passages = load_passages(data_path)
        self.glean_adds = glean_adds
        self.latency_s = latency_s  # each reply waits this long (a latency-bound model)
        self.calls: Counter[str] = Counter()
        self.unmatched = 0
        self._lock = threading.Lock()
        self._by_key: dict[str, list[int]] = {}
        self._key_lengths: set[int] = set()
        for i, passage in enumerate(self.passages):
            words = passage.text.split(" ")[:_KEY_WORDS]
            self._by_key.setdefault(" ".join(words), []).append(i)
            self._key_lengths.add(len(words))

    def __call__(self, body: dict[str, Any]) -> str:
        """Same as `reply`, after ``latency_s`` (the server answers each request in a thread)."""
        if self.latency_s:
            time.sleep(self.latency_s)
        return self.reply(body)

    def reply(self, body: dict[str, Any]) -> str:
        """Return the reply to one chat-completions request body."""
        messages = body.get("messages", [])
        users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        prompt = users[-1] if users else ""
        blocks = _TEXT_BLOCK.findall(prompt)
        skeleton = _TEXT_BLOCK.sub("", prompt)
        if "<report_context>" in skeleton:
            kind, text = "report", report_json(_between(prompt, "report_context"))
        elif "<descriptions>" in skeleton:
            kind, text = "summary", summarize(_between(prompt, "descriptions"))
        elif blocks and "<current_items>" in skeleton:
            kind, text = "gleaning", self._glean(blocks, _between(prompt, "current_items"))
        elif blocks:
            passage = self._match_any(blocks)
            kind, text = "extraction", render_record(passage) if passage else _EMPTY
        else:
            kind, text = "other", f"echo: {prompt}"
        with self._lock:
            self.calls[kind] += 1
        return text

    def find_passage(self, unit_text: str) -> RecordedPassage | None:
        """Return the recorded passage a text unit holds, or None."""
        unit = _norm(unit_text)
        words = unit.split(" ")
        for start in range(len(words)):
            for length in self._key_lengths:
                for i in self._by_key.get(" ".join(words[start:start + length]), ()):
                    if self.passages[i].text in unit:
                        return self.passages[i]
        body = _norm(re.sub(r"^\s*#[^\n]*\n", "", unit_text))  # a part of a long passage
        if len(body) >= 40:
            return next((p for p in self.passages if body in p.text), None)
        return None

    def _match_any(self, blocks: list[str]) -> RecordedPassage | None:
        for block in reversed(blocks):  # the unit's text is the last block of the template
            passage = self.find_passage(block)
            if passage is not None:
                return passage
        with self._lock:
            self.unmatched += 1
        return None

    def _glean(self, blocks: list[str], current_items: str) -> str:
        passage = self._match_any(blocks)
        if not self.glean_adds:
            return _EMPTY
        title = passage.title if passage is not None else _norm(blocks[-1])[:30]
        name = f"{title} gleaned note"
        if name in html.unescape(current_items):
            return _EMPTY
        entity = _entity_xml(name, "ENTITY", f"A detail of {title} found on a gleaning round.",
                             6, "")
        return f"<entities>\n{entity}\n</entities>\n<relationships>\nNone\n</relationships>\n"


def _between(prompt: str, tag: str) -> str:
    start = prompt.find(f"<{tag}>")
    end = prompt.find(f"</{tag}>", start)
    if start < 0:
        return ""
    return prompt[start + len(tag) + 2: end if end >= 0 else len(prompt)]


def summarize(descriptions: str) -> str:
    """The distinct ``- `` fragments, in order, joined and cut to 60 words."""
    fragments = [line.strip().removeprefix("- ").strip() for line in descriptions.splitlines()]
    words = " ".join(dict.fromkeys(f for f in fragments if f)).split()
    return " ".join(words[:_SUMMARY_WORDS])


def context_rows(context: str) -> tuple[list[str], int]:
    """Read a report context: (entity names in order, number of data rows of every table).

    Accepts CSV, pipe (Markdown) or tab tables under section headings such as
    ``-----Entities-----``, ``## Entities`` or ``Entities:``; a heading naming entities
    selects the table whose name column (``name``/``entity``/``title``, else the column after
    ``id``, else the first) gives the names. A JSON object with an ``entities`` list works too.
    """
    try:
        data = json.loads(context)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("entities"), list):
        listed = [str(e.get("name") or e.get("title") or e.get("entity") or "")
                  for e in data["entities"] if isinstance(e, dict)]
        return [n for n in listed if n], sum(len(v) for v in data.values() if isinstance(v, list))
    names: list[str] = []
    rows, section, header, col = 0, "", None, 0
    for line in (raw.strip() for raw in context.splitlines()):
        cells = _cells(line)
        if not line:
            header = None
            continue
        if len(cells) < 2:
            section, header = line.lower(), None  # a heading: a new section starts
            continue
        if set(line) <= set("|-: "):
            continue  # a Markdown table's separator row
        if header is None:
            header = [c.lower() for c in cells]
            picks = [i for i, c in enumerate(header)
                     if c in ("name", "entity", "entity_name", "title")]
            col = picks[0] if picks else (1 if header[0] in ("id", "human_readable_id") else 0)
            continue
        rows += 1
        if ("entit" in section or not section) and col < len(cells):
            names.append(cells[col])
    return names, rows


def _cells(line: str) -> list[str]:
    if "|" in line:
        return [c.strip() for c in line.strip("|").split("|")]
    if "\t" in line:
        return [c.strip() for c in line.split("\t")]
    return [c.strip() for c in next(csv.reader([line]))] if "," in line else [line]


def report_json(context: str) -> str:
    """A deterministic community report (JSON) built from a report context."""
    names, rows = context_rows(context)
    top = names[:5]
    title = names[0] if names else "Community"
    report = {
        "title": title,
        "summary": f"This community centres on {', '.join(top) or 'no named entity'}.",
        "rating": float(min(10, rows)),
        "rating_explanation": f"The context holds {rows} rows.",
        "findings": [
            {"summary": f"{name} is a member", "explanation": f"{name} appears in the context."}
            for name in (names + ["the community"] * 3)[:3]
        ],
    }
    return json.dumps(report)


@functools.cache
def _default_model() -> ReplayModel:
    return ReplayModel(DEFAULT_DATA_PATH)


def replay_reply(body: dict[str, Any]) -> str:
    """Answer ``body`` with a `ReplayModel` of `DEFAULT_DATA_PATH` (loaded once, shared)."""
    return _default_model().reply(body)


def start_replay_server(
    data_path: Path = DEFAULT_DATA_PATH, *, glean_adds: bool = False
) -> FakeOpenAIServer:
    """Start a `FakeOpenAIServer` whose replies come from a new `ReplayModel` (stop it after).

    Raises:
        FileNotFoundError: ``data_path`` does not exist.
    """
    return FakeOpenAIServer(reply=ReplayModel(data_path, glean_adds=glean_adds)).start()


def replay_model_of(server: FakeOpenAIServer) -> ReplayModel:
    """The `ReplayModel` answering a server made by `start_replay_server`."""
    if not isinstance(server.reply, ReplayModel):
        raise TypeError("the server was not started by start_replay_server")
    return server.reply


def require_replay_data(data_path: Path = DEFAULT_DATA_PATH) -> Path:
    """Return ``data_path``, or skip the test when the shared data is absent."""
    if not data_path.is_file():
        pytest.skip(f"HippoRAG replay data not found: {data_path}")
    return data_path


@pytest.fixture
def replay_server() -> Iterator[FakeOpenAIServer]:
    """A started replay server on 127.0.0.1 (skips when the shared data is absent)."""
    server = start_replay_server(require_replay_data())
    try:
        yield server
    finally:
        server.stop()
