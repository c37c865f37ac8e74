"""`HFTokenCounter`: exact token counts from a Hugging Face ``tokenizer.json``.

Used by chunking when the embedding model's own tokenizer is on this machine (the bundled
all-MiniLM-L6-v2), so a 600-token text unit is 600 of the model's tokens. Built on the
``tokenizers`` library (Rust, releases the GIL and encodes batches on all cores).

Long inputs (a 5 MB file on one line) are encoded in slices of about 100,000 characters cut
at whitespace and encoded as one batch, with offsets shifted back; a tokenizer that splits
words at whitespace (WordPiece, byte-level BPE) gives the same tokens as one encode.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import regex

from unified_kg_rag.domain.text.tokens import grapheme_floor
from unified_kg_rag.util.errors import ConfigurationError

__all__ = ["HFTokenCounter"]

logger = logging.getLogger(__name__)

_SLICE_CHARS = 100_000
_SLICE_BACKOFF = 2_000
_LAST_SPACE = regex.compile(r"(?r)\s")


class HFTokenCounter:
    """Counts and cuts text in the tokens of a ``tokenizer.json`` (implements `TokenCounter`).

    Special tokens ([CLS], [SEP], BOS/EOS) are never counted; truncation and padding stored in
    the file are switched off.

    Args:
        tokenizer_json_path: path of a Hugging Face ``tokenizer.json``.
        slice_chars: longest slice encoded at once, characters (tests use small values).

    Raises:
        ConfigurationError: the file is missing or not a tokenizer, or ``tokenizers`` is not
            installed.
    """

    def __init__(self, tokenizer_json_path: str | Path, *, slice_chars: int = _SLICE_CHARS) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise ConfigurationError("the `tokenizers` package is not installed") from exc
        path = Path(tokenizer_json_path)
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:
            raise ConfigurationError(f"cannot load tokenizer {path}: {exc}") from exc
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._slice_chars = max(slice_chars, 16)
        self.path = path

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text`` (special tokens excluded)."""
        return sum(len(enc.ids) for enc in self._encode_slices(self._slices(text)))

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Return the ``(start, end)`` character offsets of each token of ``text``, in order.

        Offsets come from the tokenizer's own alignment; several tokens of one character
        (byte-level BPE on an emoji) share that character's span.
        """
        return self._spans(text, limit=None)

    def truncate(self, text: str, max_tokens: int) -> str:
        """Return the longest prefix of ``text`` with at most ``max_tokens`` tokens.

        The cut falls at the start of the first token left out (after the end of the last
        token kept), moved back to a grapheme-cluster boundary; if the prefix re-encodes to
        more tokens (a BPE merge across the cut), one more token is dropped until it fits.

        Args:
            text: the text to cut.
            max_tokens: the token budget; ``<= 0`` gives ``""``.
        """
        if max_tokens <= 0:
            return ""
        spans = self._spans(text, limit=max_tokens + 1)
        if len(spans) <= max_tokens:
            return text
        keep = max_tokens
        while keep > 0:
            cut = grapheme_floor(text, spans[keep][0])
            prefix = text[:cut]
            if self.count(prefix) <= max_tokens:
                return prefix
            keep -= 1
        return ""

    # ------------------------------------------------------------------ internals

    def _spans(self, text: str, *, limit: int | None) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        slices = self._slices(text)
        batch = 1 if limit is not None else len(slices)
        for first in range(0, len(slices), max(batch, 1)):
            group = slices[first : first + max(batch, 1)]
            for (start, _), enc in zip(group, self._encode_slices(group), strict=True):
                spans.extend((start + a, start + b) for a, b in enc.offsets)
            if limit is not None and len(spans) >= limit:
                return spans[:limit]
        return spans

    def _slices(self, text: str) -> list[tuple[int, str]]:
        """Cut ``text`` into ``(offset, slice)`` pieces of at most ``slice_chars`` characters."""
        n = len(text)
        if n <= self._slice_chars:
            return [(0, text)]
        out: list[tuple[int, str]] = []
        start = 0
        while start < n:
            end = start + self._slice_chars
            if end >= n:
                end = n
            else:
                back = max(start + 1, end - _SLICE_BACKOFF)
                m = _LAST_SPACE.search(text, back, end)
                end = m.start() if m is not None else max(grapheme_floor(text, end), start + 1)
            out.append((start, text[start:end]))
            start = end
        return out

    def _encode_slices(self, slices: list[tuple[int, str]]) -> list[Any]:
        if len(slices) == 1:
            return [self._tokenizer.encode(slices[0][1], add_special_tokens=False)]
        return list(
            self._tokenizer.encode_batch([s for _, s in slices], add_special_tokens=False)
        )
