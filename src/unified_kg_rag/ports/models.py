"""Model ports: embedders, chat models, rerankers, token counters, parsers, keyphrases."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.messages.transcripts import MessageSourceOptions, ParsedArchive
from unified_kg_rag.domain.models import Completion, Message, ParsedDocument

__all__ = [
    "ChatModel",
    "DocumentParser",
    "Embedder",
    "KeyphraseExtractor",
    "LoadsModel",
    "MessageSource",
    "Reranker",
    "TokenCounter",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors."""

    @property
    def model_id(self) -> str:
        """A stable identifier of the model (provider, name and weights hash or version)."""
        ...

    @property
    def dimension(self) -> int:
        """The vector dimension ``d``."""
        ...

    async def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed passages.

        Args:
            texts: ``n`` strings (may be empty strings).

        Returns:
            ``ndarray[n, d] float32``, each row L2-normalised (a zero row for empty text).

        Raises:
            EmbeddingModelError: the model failed.
        """
        ...

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed a query (asymmetric models add their query prefix here).

        Returns:
            ``ndarray[d] float32``, L2-normalised.
        """
        ...


@runtime_checkable
class LoadsModel(Protocol):
    """A provider whose model loads on first use and can be loaded ahead (a local model).

    Optional: callers check ``isinstance(provider, LoadsModel)``; a remote model has nothing
    to load.
    """

    @property
    def loaded(self) -> bool:
        """True once the model is in memory."""
        ...

    @property
    def loading(self) -> bool:
        """True while the model is being loaded (a caller may show it as a step)."""
        ...

    async def load(self) -> None:
        """Load the model now (idempotent; blocking work runs off the event loop).

        Raises:
            UkrError: the model cannot be loaded (its own error types).
        """
        ...


@runtime_checkable
class ChatModel(Protocol):
    """A chat language model."""

    @property
    def model_id(self) -> str:
        """Provider and model name, e.g. ``openai:gpt-4o-mini``."""
        ...

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Return the model's reply to ``messages``.

        Args:
            messages: the conversation, oldest first.
            max_tokens: longest reply in tokens (provider default when None).
            temperature: sampling temperature (provider default when None).
            stop: stop sequences.
            json_schema: a JSON schema the reply must follow, for providers that support it.

        Raises:
            ModelError: the call failed; ``transient`` says whether a retry may succeed.
        """
        ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Yield the reply as text deltas, in order.

        The stream's finish reason goes to the caller's scope through
        `domain.llm.finish.record_stream_finish` (``stop`` when the model finished; a stream
        that records none reads as not finished).
        """
        ...


class KeyphraseExtractor(Protocol):
    """Finds the key phrases of a text (the concepts of the `lazy` graph)."""

    @property
    def name(self) -> str:
        """A stable identifier (extractor and model), part of the concept graph's digest."""
        ...

    def keyphrases(self, text: str, *, top: int, max_ngram: int) -> list[str]:
        """Return up to ``top`` phrases of at most ``max_ngram`` words, best first.

        Raises:
            ConfigurationError: the extractor's library or model is not installed.
        """
        ...


class Reranker(Protocol):
    """Scores (query, passage) pairs; higher is more relevant."""

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """Return one relevance score per text, in input order."""
        ...


class TokenCounter(Protocol):
    """Counts and cuts text in some tokenizer's tokens."""

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text``."""
        ...

    def truncate(self, text: str, max_tokens: int) -> str:
        """Return the longest prefix of ``text`` with at most ``max_tokens`` tokens.

        The cut never falls inside a character or a grapheme cluster.
        """
        ...

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Return the ``(start, end)`` character offsets of each token of ``text``, in order."""
        ...


class MessageSource(Protocol):
    """Reads one message-archive format into normalized messages (seed 001 ``MessageSource``).

    Sources are chosen by structural dispatch: the first registered source whose `matches`
    accepts a file parses it. Parsing is blocking (SQLite, file reads); callers run it in a
    worker thread.
    """

    @property
    def name(self) -> str:
        """The registered name (``imessage``, ``jsonl``)."""
        ...

    def matches(self, path: Path) -> bool:
        """Return True when ``path`` is this source's format (a cheap probe); never raises."""
        ...

    def parse(self, path: Path, options: MessageSourceOptions) -> ParsedArchive:
        """Read every recoverable message of ``path``, oldest first.

        Rows without recoverable text are counted in `ParsedArchive.skipped`, never emitted.
        The file is never written.

        Raises:
            InputError: the file cannot be read as this format (locked, corrupt, not this
                source's schema); one line naming the file and the reason.
        """
        ...


class DocumentParser(Protocol):
    """Turns one file's bytes into text. Registered per file extension."""

    def parse(self, data: bytes, *, path: str) -> ParsedDocument:
        """Parse ``data``, the bytes of the file at ``path`` (used in messages only).

        Raises:
            InputError: the bytes cannot be parsed (binary, corrupt, empty of text); the
                message names ``path`` and the reason in one line.
        """
        ...


