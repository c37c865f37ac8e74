"""A sentence encoder on `transformers` alone, for Transformer → mean Pooling → Normalize models.

sentence-transformers loads scikit-learn, scipy and its training stack on import: about a
fifth of the CPU a cold ``ukr query`` spends before its first answer. A model whose
sentence-transformers pipeline is exactly a transformer, one-mode mean pooling and L2
normalisation (the bundled all-MiniLM-L6-v2) needs only its tokenizer and transformer;
`MeanPoolingEncoder` runs those and pools as sentence-transformers does (its
``models.Pooling`` with ``pooling_mode_mean_tokens`` and ``models.Normalize``), so the
vectors are the same (checked by a test against sentence-transformers). Any other pipeline
(`simple_pipeline` returns None) is left to sentence-transformers.

torch and transformers are imported inside the functions that need them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["MeanPoolingEncoder", "simple_pipeline"]

_ST_KEYS = frozenset({"max_seq_length", "do_lower_case"})
"""``sentence_bert_config.json`` keys this encoder honours; any other one means fall back."""


def simple_pipeline(model_path: Path) -> int | None:
    """Return the model's input limit (tokens) when this encoder reproduces its pipeline.

    The pipeline must be ``Transformer`` (at the model's root), ``Pooling`` with mean pooling
    alone, then ``Normalize``; ``sentence_bert_config.json`` may set only ``max_seq_length``
    and ``do_lower_case`` (false).

    Returns:
        ``max_seq_length`` (tokens, special tokens included), or None for any other pipeline.
    """
    try:
        modules = json.loads((model_path / "modules.json").read_text("utf-8"))
        kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
        if kinds != ["Transformer", "Pooling", "Normalize"] or modules[0].get("path"):
            return None
        pooling = json.loads((model_path / modules[1]["path"] / "config.json").read_text("utf-8"))
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
        if modes != {"pooling_mode_mean_tokens"}:
            return None
        st_config = json.loads((model_path / "sentence_bert_config.json").read_text("utf-8"))
        if set(st_config) - _ST_KEYS or st_config.get("do_lower_case"):
            return None
        return int(st_config["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


class MeanPoolingEncoder:
    """Tokenizer + transformer, mean-pooled over real tokens and L2-normalised.

    Offers what `LocalEmbedder` reads of a ``SentenceTransformer``: ``tokenizer``,
    ``max_seq_length`` (settable), ``encode`` and ``get_sentence_embedding_dimension``.

    Args:
        model_path: the model directory (weights, config, tokenizer files).
        device: the torch device (``cpu``, ``cuda`` ...).
        max_seq_length: the input limit, tokens (special tokens included); longer inputs are
            truncated, as sentence-transformers does.

    Raises:
        OSError, ValueError: the files cannot be loaded (the caller reports them).
    """

    def __init__(self, model_path: Path, *, device: str, max_seq_length: int) -> None:
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer: Any = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True)
        model: Any = AutoModel.from_pretrained(str(model_path), local_files_only=True)
        self._model = model.to(device).eval()
        self._device = device
        self.max_seq_length = max_seq_length

    def get_sentence_embedding_dimension(self) -> int:
        """The vector dimension (the transformer's hidden size)."""
        return int(self._model.config.hidden_size)

    def encode(self, texts: Sequence[str], **_: object) -> NDArray[np.float32]:
        """Embed ``texts`` as one batch: ``ndarray[n, d] float32``, rows L2-normalised.

        Keyword arguments of ``SentenceTransformer.encode`` are accepted and ignored (the
        caller batches, wants numpy and normalised rows).
        """
        import torch

        with torch.inference_mode():
            batch = self.tokenizer(
                list(texts), padding=True, truncation="longest_first",
                max_length=self.max_seq_length, return_tensors="pt",
            ).to(self._device)  # fmt: skip
            tokens = self._model(**batch)[0]
            mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        out: NDArray[np.float32] = pooled.float().cpu().numpy()
        return out
