"""Summaries of a tree cluster without an LLM, and the key that lets a build reuse a summary.

`extractive_summary` writes a node's text from its children's own sentences: those nearest
the cluster centroid in embedding space, within the summary token budget, in their original
order (a centroid-based extractive summary, Radev et al., *Centroid-based summarization of
multiple documents*, 2004). It is the `raptor` methodology's ``summaries: extractive`` mode
(seed 000 §6.5), used when no LLM is configured. `input_key` digests a cluster's input, so a
later build whose cluster has the same children and texts reuses the stored summary.

Not here: embedding the sentences and the LLM summary (the ingestion stage), sentence
boundaries themselves (`domain.text.sentences`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.text.sentences import sentence_segments
from unified_kg_rag.domain.text.tokens import grapheme_floor
from unified_kg_rag.util.hashing import sha256_json

__all__ = ["extractive_summary", "input_key", "split_sentences"]

_SIMILARITY_DECIMALS = 9  # cosines are ranked at 1e-9, ties by position


def split_sentences(text: str) -> list[str]:
    """Return the sentences (and structural lines) of ``text``, in order, trimmed.

    Uses `domain.text.sentences.sentence_segments` (Punkt via nupunkt, inside the text's
    line structure); ``[]`` for blank text.
    """
    return [text[s.start : s.end] for s in sentence_segments(text)]


def extractive_summary(
    sentences: Sequence[str],
    vectors: NDArray[np.float32],
    centroid: NDArray[np.float32],
    *,
    max_tokens: int,
    count_tokens: Callable[[str], int],
) -> str:
    """Return the sentences nearest the centroid that fit the budget, in original order.

    Ranks the distinct non-blank sentences by cosine similarity to ``centroid`` (highest
    first, ties to the earlier sentence; a repeated sentence counts once, at its first
    position), then adds them greedily while ``count_tokens`` of the joined result stays
    within ``max_tokens``; a sentence that does not fit is skipped and the next one tried.
    The chosen sentences are joined by one space in their original order. When not even one
    sentence fits, the best one is cut at the last word boundary within the budget (at a
    grapheme boundary when its first word alone is over it).

    Args:
        sentences: the cluster's sentences, in reading order (children in id order).
        vectors: float ``[n, d]`` embeddings of ``sentences``, in the same order.
        centroid: float ``[d]``, the cluster's centre in the same space (need not be
            normalised).
        max_tokens: the summary's token budget; ``<= 0`` gives ``""``.
        count_tokens: the index's token counter.

    Returns:
        The summary text, within ``max_tokens``; ``""`` for no sentence.

    Raises:
        ValueError: ``vectors`` does not hold one row per sentence.

    Source: seed 000 §6.5 (``extractive`` summaries); centroid selection after Radev et al.
    (2004).
    """
    if len(vectors) != len(sentences):
        raise ValueError(f"{len(sentences)} sentences but {len(vectors)} vectors")
    first_seen: dict[str, int] = {}
    for i, sentence in enumerate(sentences):
        text = sentence.strip()
        if text and text not in first_seen:
            first_seen[text] = i
    if not first_seen or max_tokens <= 0:
        return ""
    sims = _cosines(np.asarray(vectors, dtype=np.float64), np.asarray(centroid, dtype=np.float64))
    ranked = sorted(first_seen.items(), key=lambda item: (-sims[item[1]], item[1]))
    chosen: list[tuple[int, str]] = []
    for text, position in ranked:
        trial = sorted([*chosen, (position, text)])
        if count_tokens(" ".join(t for _, t in trial)) <= max_tokens:
            chosen = trial
    if not chosen:
        return _cut(ranked[0][0], max_tokens, count_tokens)
    return " ".join(t for _, t in chosen)


def _cosines(x: NDArray[np.float64], centroid: NDArray[np.float64]) -> list[float]:
    """Cosine of each row with ``centroid``, rounded (0 for a zero vector)."""
    if x.size == 0:
        return [0.0] * len(x)
    norms = np.linalg.norm(x, axis=1) * float(np.linalg.norm(centroid))
    dots = np.einsum("ij,j->i", x, centroid.reshape(-1))
    sims = np.where(norms > 0.0, dots / np.where(norms > 0.0, norms, 1.0), 0.0)
    return [round(float(s), _SIMILARITY_DECIMALS) for s in sims]


def _cut(text: str, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """Longest prefix of ``text`` within ``max_tokens``, ending at a word (else grapheme) end."""
    word_ends = [i for i in range(1, len(text) + 1) if i == len(text) or text[i].isspace()]
    word_ends = [e for e in word_ends if not text[e - 1].isspace()]
    end = _last_fitting(text, word_ends, max_tokens, count_tokens)
    if end == 0:
        ends = sorted({grapheme_floor(text, i) for i in range(1, len(text) + 1)} - {0})
        end = _last_fitting(text, ends, max_tokens, count_tokens)
    return text[:end].rstrip()


def _last_fitting(
    text: str, ends: list[int], max_tokens: int, count_tokens: Callable[[str], int]
) -> int:
    """Largest end in ``ends`` (ascending) whose prefix fits, by bisection; 0 when none."""
    low, high, best = 0, len(ends) - 1, 0
    while low <= high:
        mid = (low + high) // 2
        if count_tokens(text[: ends[mid]]) <= max_tokens:
            best, low = ends[mid], mid + 1
        else:
            high = mid - 1
    return best


def input_key(children: Sequence[tuple[str, str]], settings_digest: str) -> str:
    """Return the digest of a cluster's summary input.

    Args:
        children: ``(id, text)`` of each child, in any order (sorted by id here).
        settings_digest: digest of the summary settings (mode, model, prompt, language,
            budget) that shape the summary.

    Returns:
        SHA-256 hex digest of the children sorted by id (ids and texts) and the digest; equal
        inputs give equal keys whatever the order of ``children``.

    Source: seed 000 §6.5 step 4 (``input_key`` reuse).
    """
    ordered = sorted(children)
    return sha256_json({"children": [[i, t] for i, t in ordered], "settings": settings_digest})
