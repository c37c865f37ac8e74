"""OpenAIEmbedder against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import warnings

import numpy as np
import pytest
from tests.support.openai_server import FakeOpenAIServer, Scripted, fake_embedding

import unified_kg_rag.adapters.embeddings  # noqa: F401  (registers the providers)
from unified_kg_rag.adapters.embeddings.openai import PROBE_TEXT, OpenAIEmbedder
from unified_kg_rag.adapters.registry import CHUNK_TOKENIZERS, EMBEDDERS
from unified_kg_rag.config.models import EmbeddingsConfig, OpenAIEmbeddingsConfig
from unified_kg_rag.domain.llm.usage import usage_scope
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.util.errors import EmbeddingModelError

pytestmark = pytest.mark.integration


@pytest.fixture
def server(openai_server: FakeOpenAIServer) -> FakeOpenAIServer:
    openai_server.embedding_dimension = 12
    return openai_server


def embedder(server: FakeOpenAIServer, **fields: object) -> OpenAIEmbedder:
    config = OpenAIEmbeddingsConfig.model_validate(
        {"base_url": server.base_url, "api_key": "k", "model": "emb", **fields}
    )
    return OpenAIEmbedder(config, max_retries=2, retry_initial_s=0.0, retry_max_s=0.0)


def expected(text: str, dim: int) -> np.ndarray:
    v = np.asarray(fake_embedding(text, dim), dtype=np.float32)
    return v / np.linalg.norm(v)


def test_vectors_are_reordered_by_index_normalised_and_batched(server: FakeOpenAIServer) -> None:
    texts = [f"passage number {i}" for i in range(7)]
    emb = embedder(server, max_batch=3)
    with usage_scope() as usage:
        out = asyncio.run(emb.embed_documents(texts))
    assert out.shape == (7, 12)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    for i, t in enumerate(texts):  # the server answers in reverse index order
        np.testing.assert_allclose(out[i], expected(t, 12), rtol=1e-5, atol=1e-6)
    batches = [r.body["input"] for r in server.requests_to("/embeddings")]
    assert batches == [texts[0:3], texts[3:6], texts[6:7]]
    assert all(r.body["model"] == "emb" for r in server.requests)
    assert all(r.body["encoding_format"] == "float" for r in server.requests)
    assert usage.embedded_texts == 7
    assert emb.dimension == 12  # learned from the first call, no probe
    assert len(server.requests) == 3


def test_blank_texts_are_not_sent_and_give_zero_rows(server: FakeOpenAIServer) -> None:
    out = asyncio.run(embedder(server).embed_documents(["", "real text", "   "]))
    assert np.count_nonzero(out[0]) == 0
    assert np.count_nonzero(out[2]) == 0
    np.testing.assert_allclose(out[1], expected("real text", 12), rtol=1e-5, atol=1e-6)
    assert server.requests[0].body["input"] == ["real text"]


def test_configured_dimension_is_sent(server: FakeOpenAIServer) -> None:
    emb = embedder(server, dimension=5)
    assert emb.dimension == 5  # no request needed
    assert server.requests == []
    vec = asyncio.run(emb.embed_query("a query"))
    assert vec.shape == (5,)
    assert server.requests[0].body["dimensions"] == 5
    assert emb.model_id == "openai:emb@5"


def test_dimension_read_first_is_probed_once(server: FakeOpenAIServer) -> None:
    emb = embedder(server)
    assert emb.dimension == 12
    assert emb.dimension == 12
    assert [r.body["input"] for r in server.requests] == [[PROBE_TEXT]]


def test_transient_errors_are_retried(server: FakeOpenAIServer) -> None:
    server.script(Scripted(status=503), Scripted(status=429))
    out = asyncio.run(embedder(server).embed_documents(["x"]))
    assert out.shape == (1, 12)
    assert len(server.requests) == 3


def test_authentication_failure_is_not_retried(server: FakeOpenAIServer) -> None:
    server.script(Scripted(status=401, message="invalid api key"))
    with pytest.raises(EmbeddingModelError) as info:
        asyncio.run(embedder(server).embed_documents(["x"]))
    assert "authentication failed" in str(info.value)
    assert server.base_url in str(info.value)
    assert info.value.transient is False
    assert len(server.requests) == 1


def test_api_key_comes_from_the_named_variable(server: FakeOpenAIServer,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UKR_TEST_EMB_KEY", "from-env")
    config = OpenAIEmbeddingsConfig(base_url=server.base_url, api_key_env="UKR_TEST_EMB_KEY")
    asyncio.run(OpenAIEmbedder(config).embed_documents(["x"]))
    monkeypatch.delenv("UKR_TEST_EMB_KEY")
    asyncio.run(OpenAIEmbedder(config).embed_documents(["y"]))
    keys = [r.headers["authorization"] for r in server.requests]
    assert keys == ["Bearer from-env", "Bearer not-needed"]


def test_registry_builds_the_openai_embedder_and_estimate_tokenizer(
    server: FakeOpenAIServer,
) -> None:
    config = EmbeddingsConfig(
        kind="openai", openai=OpenAIEmbeddingsConfig(base_url=server.base_url, model="emb")
    )
    emb = EMBEDDERS.get("openai")(config)
    assert isinstance(emb, OpenAIEmbedder)
    assert isinstance(CHUNK_TOKENIZERS.get("openai")(config), EstimateTokenCounter)


# ------------------------------------------------ replies that are not embeddings (break-it)


def test_an_html_page_with_status_200_is_one_error_naming_the_endpoint(
    server: FakeOpenAIServer,
) -> None:
    server.script(Scripted(raw_body=b"<html><h1>502 Bad Gateway</h1>nginx</html>",
                           content_type="text/html", path="/embeddings"))
    with pytest.raises(EmbeddingModelError, match="did not answer with embeddings") as info:
        asyncio.run(embedder(server).embed_documents(["a passage"]))
    assert server.base_url in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e300"])
def test_vectors_holding_nan_or_inf_name_the_endpoint_and_warn_nothing(
    server: FakeOpenAIServer, bad: str
) -> None:
    body = ('{"object": "list", "model": "emb", "data": [{"object": "embedding", "index": 0, '
            f'"embedding": [0.5, {bad}, 0.25]}}]}}').encode()
    server.script(Scripted(raw_body=body, path="/embeddings", times=None))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a numpy RuntimeWarning would reach the user's stderr
        with pytest.raises(EmbeddingModelError, match="NaN or infinite") as info:
            asyncio.run(embedder(server).embed_documents(["a passage"]))
    assert server.base_url in str(info.value)
