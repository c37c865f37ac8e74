"""`CrossEncoderReranker`: a local sentence-transformers cross-encoder, offline.

The model is read from ``query.rerank.model_path``, a directory saved by
``CrossEncoder.save_pretrained`` or a Hugging Face ``*ForSequenceClassification`` model with
one output label (e.g. ms-marco-MiniLM-L-6-v2, bge-reranker-base copied to disk). Nothing is
downloaded: the model loads with ``local_files_only=True``, and ``HF_HUB_OFFLINE`` /
``TRANSFORMERS_OFFLINE`` are set (unless already set) before sentence-transformers is
imported, at the first `rerank` call.

Scores are the model's **raw logits** (no sigmoid), whatever activation the model's config
names: a sigmoid is monotone, so the order is the same, and logits do not saturate into ties
at 0 or 1 for strongly (ir)relevant passages. They are unbounded and only comparable within
one model. Texts longer than the model's ``max_seq_length`` are truncated by the tokenizer.

torch and sentence-transformers are imported inside functions; scoring runs in a worker
thread (`asyncio.to_thread`), one batch at a time per model.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from unified_kg_rag.adapters.embeddings.local import _quiet_transformers
from unified_kg_rag.config.search import RerankConfig
from unified_kg_rag.domain.llm.usage import record_usage
from unified_kg_rag.domain.models import TokenUsage
from unified_kg_rag.util.errors import ConfigurationError, ModelError

__all__ = ["CrossEncoderReranker"]

logger = logging.getLogger(__name__)

_FIELD = "query.rerank.model_path"
_INSTALL_HINT = "install the `local` extra: pip install 'unified-kg-rag[local]'"


class CrossEncoderReranker:
    """Implements `ports.Reranker` with a local cross-encoder (see the module docstring).

    The model loads lazily, at the first `rerank` call with texts; building the adapter reads
    nothing from disk.

    Args:
        model_path: the model directory.
        device: torch device (``"cpu"``, ``"cuda"``); None lets sentence-transformers choose.
        batch_size: (query, text) pairs per forward pass.
    """

    def __init__(
        self, model_path: Path, *, device: str | None = None, batch_size: int = 32
    ) -> None:
        self.model_path = model_path
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._predict_lock = threading.Lock()

    @classmethod
    def from_config(cls, config: RerankConfig) -> CrossEncoderReranker:
        """Build the adapter from the ``query.rerank`` section.

        Raises:
            ConfigurationError: ``model_path`` is not set.
        """
        if not (config.model_path or "").strip():
            raise ConfigurationError(
                "a local cross-encoder directory is required for kind `cross_encoder`",
                field=_FIELD,
            )
        return cls(Path(str(config.model_path)).expanduser())

    @property
    def model_id(self) -> str:
        """``cross_encoder:<directory name>``."""
        return f"cross_encoder:{self.model_path.name}"

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """Score each ``(query, text)`` pair with the cross-encoder.

        Args:
            query: the question.
            texts: ``n`` passages.

        Returns:
            ``n`` raw logits, in input order; higher is more relevant. An empty ``texts``
            gives ``[]`` without loading the model.

        Raises:
            ConfigurationError: ``model_path`` does not exist or does not hold a single-score
                cross-encoder, or sentence-transformers is not installed.
            ModelError: the forward pass failed or gave non-finite scores.
        """
        if not texts:
            return []
        started = time.perf_counter()
        scores = await asyncio.to_thread(self._score, query, list(texts))
        record_usage(TokenUsage(latency_s=time.perf_counter() - started))
        return scores

    # ------------------------------------------------------------------ internals

    def _score(self, query: str, texts: list[str]) -> list[float]:
        model = self._load()
        import torch

        pairs = [(query, text) for text in texts]
        try:
            with self._predict_lock:
                raw = model.predict(
                    pairs,
                    batch_size=self.batch_size,
                    activation_fn=torch.nn.Identity(),
                    show_progress_bar=False,
                    convert_to_numpy=True,
                )
        except Exception as exc:
            raise ModelError(f"{self.model_id}: scoring failed: {exc}") from exc
        scores = [float(s) for s in raw.reshape(-1)]
        if len(scores) != len(texts):
            raise ModelError(
                f"{self.model_id}: gave {len(scores)} scores for {len(texts)} texts"
            )
        if not all(math.isfinite(s) for s in scores):
            raise ModelError(f"{self.model_id}: gave non-finite scores (NaN or infinity)")
        return scores

    def _load(self) -> Any:
        """Load the model once (thread-safe, blocking)."""
        with self._load_lock:
            if self._model is not None:
                return self._model
            path = self.model_path
            if not path.is_dir():
                raise ConfigurationError(f"{path} is not a directory", field=_FIELD)
            if not (path / "config.json").is_file():
                raise ConfigurationError(
                    f"{path} has no config.json: not a Hugging Face / sentence-transformers "
                    "model directory",
                    field=_FIELD,
                )
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import CrossEncoder
            except ImportError as exc:
                raise ConfigurationError(
                    f"sentence-transformers is not installed; {_INSTALL_HINT}",
                    field="query.rerank.kind",
                ) from exc
            try:
                with _quiet_transformers():
                    model = CrossEncoder(str(path), device=self.device, local_files_only=True)
            except Exception as exc:
                first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                raise ConfigurationError(
                    f"cannot load a cross-encoder from {path}: {type(exc).__name__}: "
                    f"{first_line}",
                    field=_FIELD,
                ) from exc
            if model.num_labels != 1:
                raise ConfigurationError(
                    f"{path} gives {model.num_labels} scores per pair; a reranker must give "
                    "one (num_labels = 1)",
                    field=_FIELD,
                )
            logger.info("loaded cross-encoder %s from %s", self.model_id, path)
            self._model = model
            return model
