"""Cutting texts longer than an embedding model's input into windows, and merging them back.

A model that reads at most ``w`` tokens silently truncates longer input. `plan_windows` cuts
such a text into consecutive windows of at most ``w`` tokens using the tokenizer's character
offsets; `combine_windows` averages the windows' (unit) vectors and re-normalises, so every
part of the text contributes, each window with equal weight.

A window boundary is moved back, by up to 16 tokens, to a token preceded by whitespace, so a
window does not start inside a word (re-tokenizing it then gives the same tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["WindowPlan", "combine_windows", "plan_windows"]

_MAX_BACKOFF_TOKENS = 16


@dataclass(frozen=True)
class WindowPlan:
    """The pieces to embed for a list of texts.

    Attributes:
        pieces: the strings to embed (a short text itself, or the windows of a long one).
        owners: ``int64 [len(pieces)]``, the index of the text each piece belongs to.
    """

    pieces: list[str]
    owners: NDArray[np.int64]


def plan_windows(
    texts: Sequence[str], offsets: Sequence[Sequence[tuple[int, int]]], window: int
) -> WindowPlan:
    """Cut each text with more than ``window`` tokens into consecutive windows.

    Args:
        texts: the texts.
        offsets: per text, the ``(start, end)`` character offsets of its tokens (no special
            tokens), as a fast tokenizer's ``offset_mapping`` gives them.
        window: the most tokens one piece may hold (>= 1).

    Returns:
        The pieces in text order; the windows of one text cover it without gaps or overlap.
    """
    pieces: list[str] = []
    owners: list[int] = []
    for i, (text, spans) in enumerate(zip(texts, offsets, strict=True)):
        if len(spans) <= window:
            pieces.append(text)
            owners.append(i)
            continue
        start_tok = 0
        start_char = 0
        while len(spans) - start_tok > window:
            cut = start_tok + window
            floor = start_tok + max(1, window // 2)
            for _ in range(_MAX_BACKOFF_TOKENS):
                if cut <= floor or spans[cut][0] > spans[cut - 1][1]:
                    break
                cut -= 1
            if not spans[cut][0] > spans[cut - 1][1]:
                cut = start_tok + window  # no word start nearby: cut inside the word
            end_char = spans[cut][0]
            pieces.append(text[start_char:end_char])
            owners.append(i)
            start_tok, start_char = cut, end_char
        pieces.append(text[start_char:])
        owners.append(i)
    return WindowPlan(pieces=pieces, owners=np.asarray(owners, dtype=np.int64))


def combine_windows(
    vectors: NDArray[np.float32], owners: NDArray[np.int64], n_texts: int
) -> NDArray[np.float32]:
    """Average the piece vectors of each text and L2-normalise the means.

    Args:
        vectors: ``float32 [n_pieces, d]``.
        owners: ``int64 [n_pieces]``, text index of each piece.
        n_texts: the number of texts.

    Returns:
        ``float32 [n_texts, d]``, rows L2-normalised (a text with no piece stays zero).
    """
    sums = np.zeros((n_texts, vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, owners, vectors.astype(np.float64))
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    np.divide(sums, norms, out=sums, where=norms > 0)
    return sums.astype(np.float32)
