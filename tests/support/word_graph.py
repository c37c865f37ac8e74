"""A tiny deterministic "LLM" for incremental-indexing tests: the graph is the text's words.

`word_graph_reply` answers the prompts of the graph build the way a perfectly consistent model
would, from the prompt alone (so the response cache and a fresh model agree):

- extraction (a ``<text>`` block, no ``<current_items>``): every capitalized word is an
  entity; its type is ``PERSON`` when the next word is one of `PERSON_VERBS`, else ``PLACE``;
  its description is the word and the next one (``"Ada sings."``); every two consecutive
  distinct capitalized words make a ``NEXT_TO`` relationship whose strength is derived from
  the two names;
- gleaning (``<current_items>``): nothing missing;
- claims (``Entities of this text:``): one claim per listed entity that the text names,
  ``subject STATED next-capitalized-word``, status ``TRUE`` for a person verb else
  ``SUSPECTED``, a start date derived from the name (``"20NN"``, or ``"unknown"``), plus one
  claim about ``Newton``, who is never an entity (dropped by resolution);
- description summary (``<descriptions>``): ``"Summary <digest>"`` of the fragments, so a
  summary changes whenever any fragment does;
- community report (``<report_context>``): `tests.stages.test_graph_build.reply`'s JSON report
  built from the context's rows.

`render_doc` writes a document from (name, verb) pairs, e.g. ``[("Ada", "sings"), ("London",
"rains")]`` → ``"Ada sings, London rains."``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "NAMES",
    "PERSON_VERBS",
    "VERBS",
    "claims_reply",
    "extracted",
    "render_doc",
    "word_graph_reply",
]

NAMES = ("Ada", "Babbage", "London", "Kyoto", "Yukawa")
PERSON_VERBS = ("sings", "reads")
VERBS = (*PERSON_VERBS, "rains")

_TEXT = re.compile(r"<text>\n(.*?)\n</text>", re.DOTALL)
_WORD = re.compile(r"[A-Za-z]+")


def render_doc(pairs: Sequence[tuple[str, str]]) -> str:
    """Return a document stating ``name verb`` for each pair, in order."""
    return ", ".join(f"{name} {verb}" for name, verb in pairs) + "."


def extracted(
    text: str,
) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str, int]]]:
    """Return the entities (name, type, description) and relationships of ``text``.

    Relationships are (source, target, description, strength).
    """
    words = _WORD.findall(text)
    entities: dict[str, tuple[str, str, str]] = {}
    capitals: list[str] = []
    for i, word in enumerate(words):
        if not word[0].isupper():
            continue
        following = words[i + 1] if i + 1 < len(words) else ""
        kind = "PERSON" if following in PERSON_VERBS else "PLACE"
        entities.setdefault(word, (word, kind, f"{word} {following}.".replace(" .", ".")))
        capitals.append(word)
    relationships: dict[tuple[str, str], tuple[str, str, str, int]] = {}
    for a, b in itertools.pairwise(capitals):
        if a != b:
            strength = (len(a) * 3 + len(b)) % 9 + 1
            relationships.setdefault((a, b), (a, b, f"{a} comes before {b}.", strength))
    return list(entities.values()), list(relationships.values())


def _xml(text: str) -> str:
    entities, relationships = extracted(text)
    ents = "".join(
        f"<entity><name>{n}</name><type>{t}</type><description>{d}</description>"
        f"<confidence>8</confidence><span>{n}</span></entity>\n"
        for n, t, d in entities
    )
    rels = "".join(
        f"<relationship><source>{s}</source><target>{o}</target><type>NEXT_TO</type>"
        f"<description>{d}</description><strength>{w}</strength><span></span></relationship>\n"
        for s, o, d, w in relationships
    )
    return (f"<entities>\n{ents or 'None'}</entities>\n"
            f"<relationships>\n{rels or 'None'}</relationships>")


def claims_reply(prompt: str) -> str:
    """Return the claim reply (JSON) for a claim prompt (module docstring)."""
    found = _TEXT.findall(prompt)
    words = _WORD.findall(found[-1] if found else "")
    listed = re.findall(r"^- (.+)$", prompt.split("Entities of this text:", 1)[1], re.M)
    claims = []
    for name in listed:
        at = words.index(name) if name in words else -1
        following = words[at + 1] if 0 <= at < len(words) - 1 else ""
        nxt = next((w for w in words[at + 1:] if w[0].isupper() and w != name), "")
        claims.append({
            "subject": name, "object": nxt, "type": "stated",
            "status": "TRUE" if following in PERSON_VERBS else "suspected",
            "start_date": f"20{len(name):02d}" if len(name) % 2 else "unknown",
            "description": f"{name} {following}.",
            "source_text": f"{name} {following}",
        })
    claims.append({"subject": "Newton", "type": "STATED", "status": "TRUE",
                   "description": "Newton is never in the text."})
    return json.dumps({"claims": claims})


def word_graph_reply(body: dict[str, Any]) -> str:
    """Answer one chat request (an OpenAI request body) deterministically (module docstring)."""
    from tests.stages.test_graph_build import reply as report_reply

    prompt = "\n".join(
        m.get("content", "") for m in body["messages"] if m.get("role") == "user"
    )
    if "<report_context>" in prompt:
        return report_reply(body)
    if "<descriptions>" in prompt:
        block = prompt[prompt.find("<descriptions>"):prompt.find("</descriptions>")]
        return "Summary " + hashlib.sha256(block.encode()).hexdigest()[:12]
    if "<passages>" in prompt:  # a RAPTOR cluster summary
        block = prompt[prompt.find("<passages>"):prompt.find("</passages>")]
        return "Cluster summary " + hashlib.sha256(block.encode()).hexdigest()[:12] + "."
    if "Entities of this text:" in prompt:
        return claims_reply(prompt)
    if "<current_items>" in prompt:
        return "<entities>None</entities>\n<relationships>None</relationships>"
    found = _TEXT.findall(prompt)
    return _xml(found[-1] if found else "")
