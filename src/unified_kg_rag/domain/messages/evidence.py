"""Per-message provenance of answers over message archives: labels, citations, evidence.

A passage cut from a transcript holds whole messages; in the answer context each message is
labelled ``[n.m]`` (message ``m`` of source ``n``), so a model can cite the exact message it
rests on. The evidence of an answer (`evidence_from_answer`) is the messages it cites by
label, and for a plain ``[n]`` the messages of source ``n`` whose content words the citing
sentence shares — never the whole thread-day. This is the per-message grain seed 004 measured
against document-grain citation (LightRAG cited 17.2% of the corpus per answer at provenance
recall 0.515; per-message episodes cited 1.9%).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from unified_kg_rag.domain.answers.citations import (
    CitationGroup,
    citation_groups,
    label_names_message,
    unquoted,
)
from unified_kg_rag.domain.messages.transcripts import EDITED_MARK, REACTIONS_MARK
from unified_kg_rag.domain.models import MessageRef, Source
from unified_kg_rag.domain.text.analysis import lexical_query_terms, lexical_terms, sentence_spans

__all__ = [
    "MESSAGE_CITATION_INSTRUCTIONS",
    "evidence_from_answer",
    "labelled_text",
    "message_body",
    "message_labels",
]

MESSAGE_CITATION_INSTRUCTIONS = (
    "\n\nSome sources are message transcripts: each message in them starts with a label "
    "such as [2.3] (message 3 of source 2). Cite the messages your answer rests on by "
    "these labels, e.g. [2.3], rather than the whole source."
)
"""Appended to the answer system prompt when a source holds messages."""

_LEADING = re.compile(r"(?:\s*\[[^\[\]]*\])+")
_PER_CITATION = 3
"""Most messages one plain ``[n]`` citation contributes to the evidence."""


def message_labels(source: Source) -> list[str]:
    """Return the labels of a source's messages: ``n.1``, ``n.2`` ..., in order."""
    return [f"{source.n}.{i}" for i in range(1, len(source.messages) + 1)]


def labelled_text(source: Source) -> str:
    """Return a passage's text with each message block prefixed by its ``[n.m]`` label.

    Blocks are found by the rendered text of each `MessageRef` (whole lines of the passage);
    a passage without messages, or a graph item (whose messages are provenance, not context),
    is returned unchanged.
    """
    if source.kind != "text_unit" or not source.messages:
        return source.text
    text = source.text
    out: list[str] = []
    cursor = search = 0
    for label, message in zip(message_labels(source), source.messages, strict=True):
        head = message.text.split("\n", 1)[0]
        at = _line_at(text, head, search) if head else -1
        if at < 0:
            continue
        out.append(text[cursor:at])
        out.append(f"[{label}] ")
        cursor, search = at, at + len(head)
    out.append(text[cursor:])
    return "".join(out)


def _line_at(text: str, head: str, start: int) -> int:
    """Offset of the first line of ``text`` at or after ``start`` that begins with ``head``."""
    at = text.find(head, start)
    while at > 0 and text[at - 1] != "\n":
        at = text.find(head, at + 1)
    return at


def evidence_from_answer(answer: str, sources: Sequence[Source]) -> tuple[MessageRef, ...]:
    """Return the messages an answer rests on, in the order it first cites them.

    ``[n.m]`` labels name messages directly (only when source ``n`` is a transcript passage
    holding message ``m``: `domain.answers.citations.label_names_message`, the rule that
    decides `RAGOutput.cited` too); a plain ``[n]`` citing a source that holds messages adds
    up to three of them: those sharing the most content words with the sentence that cites
    it (at least one word; ties by transcript order). A citation standing alone or opening a
    sentence (``... lasagna. [1] Bob ...``) cites the sentence before it. A range ``[1-3]``
    cites its sources but names no message.

    Args:
        answer: the answer text.
        sources: the sources of the answer's context (with their `Source.messages`).

    Returns:
        Distinct messages (by guid), each labelled as in the context.
    """
    by_n = {s.n: s for s in sources}
    picked: dict[str, MessageRef] = {}
    before: set[str] = set()
    masked = unquoted(answer)  # a quotation may hold sentence ends: mask it whole first
    for start, end in sentence_spans(answer) or [(0, len(answer))]:
        sentence = answer[start:end]
        groups = list(citation_groups(masked[start:end]))
        own = set(lexical_query_terms(_without(sentence, groups)))
        # citations opening a sentence ("... lasagna. [1] Bob ...") or standing alone refer
        # to the sentence before them
        lead = _LEADING.match(sentence)
        opening = lead.end() if lead else 0
        for group in groups:
            words = (before or own) if group.start < opening else (own or before)
            for item in group.items:
                source = by_n.get(item.source)
                if item.message is not None:
                    if source is not None and label_names_message(source, item.message):
                        ref = source.messages[item.message - 1]
                        picked.setdefault(ref.guid, _labelled(ref, f"{item.source}.{item.message}"))
                    continue
                if item.last is not None or source is None or not source.messages:
                    continue
                for ref, label in _supporting(words, source):
                    picked.setdefault(ref.guid, _labelled(ref, label))
        before = own or before
    return tuple(picked.values())


def _without(sentence: str, groups: Sequence[CitationGroup]) -> str:
    """``sentence`` with its citation brackets blanked out."""
    out, cursor = [], 0
    for group in groups:
        out.append(sentence[cursor : group.start])
        out.append(" ")
        cursor = group.end
    out.append(sentence[cursor:])
    return "".join(out)


def _supporting(words: set[str], source: Source) -> list[tuple[MessageRef, str]]:
    """The messages of ``source`` sharing the most of ``words`` (a sentence's content words)."""
    scored: list[tuple[int, int, MessageRef, str]] = []
    for i, (ref, label) in enumerate(zip(source.messages, message_labels(source), strict=True)):
        body = message_body(ref.text)
        overlap = len(words & set(lexical_terms(body)))
        if overlap:
            scored.append((-overlap, i, ref, label))
    scored.sort(key=lambda t: (t[0], t[1]))
    return [(ref, label) for _, _, ref, label in scored[:_PER_CITATION]]


def message_body(block: str) -> str:
    """Return a rendered message block without its time, sender, edited mark and reactions."""
    lines = block.split("\n")
    while len(lines) > 1 and lines[-1].lstrip().startswith((REACTIONS_MARK, EDITED_MARK)):
        lines = lines[:-1]
    return "\n".join(lines).split(": ", 1)[-1]


def _labelled(ref: MessageRef, label: str) -> MessageRef:
    return ref if ref.label == label else ref.model_copy(update={"label": label})
