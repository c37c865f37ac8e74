"""Rerankers against real components: a local /rerank HTTP server and a tiny local cross-encoder.

The cross-encoder is a random-weight BERT built in the test (seeded) and saved to tmp_path, so
nothing is downloaded; its scores are checked against a direct transformers forward pass.
"""

from __future__ import annotations

import asyncio
import math
import socket
import time
from pathlib import Path

import pytest
from pydantic import ValidationError
from tests.support.rerank_server import FakeRerankServer, ScriptedReply, fake_score

from unified_kg_rag.adapters.registry import RERANKERS
from unified_kg_rag.adapters.rerank.cross_encoder import CrossEncoderReranker
from unified_kg_rag.adapters.rerank.http import HttpReranker, parse_scores
from unified_kg_rag.bootstrap import build_app, check_config
from unified_kg_rag.config.load import load_config
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.config.search import RerankConfig
from unified_kg_rag.domain.llm.usage import usage_scope
from unified_kg_rag.util.errors import ConfigurationError, ModelError, ModelOutputError

pytestmark = pytest.mark.integration

QUERY = "where did the cat sit"
TEXTS = [
    "the dog ran to the river",
    "the cat sat on the mat",
    "money in the bank",
    "where the cat did sit was the mat",
    "nothing relevant here",
]


def http_reranker(url: str, **kwargs: object) -> HttpReranker:
    options: dict[str, object] = {"retry_initial_s": 0.0, "retry_max_s": 0.0, **kwargs}
    return HttpReranker(url, **options)  # type: ignore[arg-type]


def expected_scores(query: str, texts: list[str]) -> list[float]:
    return [fake_score(query, t) for t in texts]


# ----------------------------------------------------------------------------- HTTP: shapes


@pytest.mark.parametrize("style", ["cohere", "jina", "tei"])
def test_scores_map_back_to_their_texts_for_each_dialect(style: str) -> None:
    api_style = "tei" if style == "tei" else "cohere"
    with FakeRerankServer(style=style, api_key="sekret") as server:  # type: ignore[arg-type]
        rr = http_reranker(server.url, model="rr-model", api_key="sekret", api_style=api_style)
        scores = asyncio.run(rr.rerank(QUERY, TEXTS))
    assert scores == pytest.approx(expected_scores(QUERY, TEXTS))
    # the server answers best first, so input order only comes back through the indexes
    assert max(range(len(TEXTS)), key=scores.__getitem__) == 3
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request.headers["authorization"] == "Bearer sekret"
    if style == "tei":
        assert request.body == {"query": QUERY, "texts": TEXTS}
    else:
        assert request.body == {
            "model": "rr-model", "query": QUERY, "documents": TEXTS, "top_n": len(TEXTS)
        }


def test_auto_falls_back_to_the_tei_body_once_and_keeps_it() -> None:
    with FakeRerankServer(style="tei") as server:
        rr = http_reranker(server.url)
        assert rr.api_style == "auto"
        first = asyncio.run(rr.rerank(QUERY, TEXTS))
        second = asyncio.run(rr.rerank("money bank", TEXTS))
    assert first == pytest.approx(expected_scores(QUERY, TEXTS))
    assert second == pytest.approx(expected_scores("money bank", TEXTS))
    bodies = [r.body for r in server.requests]
    assert len(bodies) == 3  # Cohere body refused (422), TEI body, then TEI only
    assert "documents" in bodies[0] and "texts" not in bodies[0]
    assert bodies[1] == {"query": QUERY, "texts": TEXTS}
    assert bodies[2] == {"query": "money bank", "texts": TEXTS}
    assert rr.api_style == "tei"


def test_auto_against_a_strict_cohere_server_sends_one_request() -> None:
    with FakeRerankServer(style="cohere") as server:
        rr = http_reranker(server.url)
        scores = asyncio.run(rr.rerank(QUERY, TEXTS))
    assert scores == pytest.approx(expected_scores(QUERY, TEXTS))
    assert len(server.requests) == 1
    assert "model" not in server.requests[0].body  # no model configured: none sent
    assert "authorization" not in server.requests[0].headers
    assert rr.api_style == "cohere"


def test_auto_names_the_setting_when_both_bodies_are_refused() -> None:
    with FakeRerankServer(style="cohere") as server:
        server.script(ScriptedReply(status=422, message="no documents"),
                      ScriptedReply(status=400, message="no texts"))
        rr = http_reranker(server.url, max_retries=2)
        with pytest.raises(ModelError) as info:
            asyncio.run(rr.rerank(QUERY, TEXTS))
    message = str(info.value)
    assert "no documents" in message and "no texts" in message
    assert "query.rerank.api_style" in message and "\n" not in message
    assert info.value.status_code == 400 and info.value.transient is False
    assert [("documents" in r.body, "texts" in r.body) for r in server.requests] == [
        (True, False), (False, True)
    ]
    assert rr.api_style == "auto"  # nothing settled


def test_texts_go_in_batches_and_keep_their_order() -> None:
    texts = [f"passage {i} about the cat" if i % 7 == 0 else f"passage {i}" for i in range(70)]
    with FakeRerankServer(style="tei", max_batch=32) as server:
        rr = http_reranker(server.url, api_style="tei", max_batch=32)
        scores = asyncio.run(rr.rerank("the cat", texts))
    assert scores == pytest.approx(expected_scores("the cat", texts))
    assert [len(r.body["texts"]) for r in server.requests] == [32, 32, 6]
    assert [t for r in server.requests for t in r.body["texts"]] == texts


def test_texts_missing_from_the_reply_rank_below_every_scored_text() -> None:
    with FakeRerankServer(style="cohere") as server:
        server.limit_results = 2
        scores = asyncio.run(http_reranker(server.url).rerank(QUERY, TEXTS))
    full = expected_scores(QUERY, TEXTS)
    top_two = sorted(range(len(TEXTS)), key=full.__getitem__, reverse=True)[:2]
    for i in top_two:
        assert scores[i] == pytest.approx(full[i])
    missing = [scores[i] for i in range(len(TEXTS)) if i not in top_two]
    assert len(missing) == 3
    assert max(missing) < min(scores[i] for i in top_two)
    assert all(math.isfinite(s) for s in scores)


def test_no_texts_sends_no_request() -> None:
    with FakeRerankServer() as server:
        assert asyncio.run(http_reranker(server.url).rerank(QUERY, [])) == []
    assert server.requests == []


def test_usage_records_the_time_spent_but_no_model_call() -> None:
    with FakeRerankServer() as server:
        server.script(ScriptedReply(delay_s=0.05))
        rr = http_reranker(server.url, api_style="cohere")
        with usage_scope() as usage:
            scores = asyncio.run(rr.rerank(QUERY, TEXTS))
    assert scores == pytest.approx(expected_scores(QUERY, TEXTS))
    assert usage.latency_s >= 0.05
    assert usage.calls == 0  # rerank requests are not LLM calls


# ----------------------------------------------------------------------------- HTTP: errors


def test_authentication_failure_is_fatal_and_not_retried() -> None:
    with FakeRerankServer(api_key="right") as server:
        rr = http_reranker(server.url, api_key="wrong", max_retries=3)
        with pytest.raises(ModelError) as info:
            asyncio.run(rr.rerank(QUERY, TEXTS))
    err = info.value
    assert err.status_code == 401
    assert err.transient is False
    assert server.url in str(err) and "invalid api token" in str(err)
    assert "\n" not in str(err)
    assert len(server.requests) == 1


def test_server_error_then_success_is_retried() -> None:
    with FakeRerankServer(style="cohere") as server:
        server.script(ScriptedReply(status=500, message="overloaded"))
        rr = http_reranker(server.url, api_style="cohere", max_retries=2)
        scores = asyncio.run(rr.rerank(QUERY, TEXTS))
    assert scores == pytest.approx(expected_scores(QUERY, TEXTS))
    assert len(server.requests) == 2


def test_persistent_server_errors_give_up_after_the_retries() -> None:
    with FakeRerankServer() as server:
        server.script(*[ScriptedReply(status=503, message="down")] * 5)
        rr = http_reranker(server.url, api_style="cohere", max_retries=2)
        with pytest.raises(ModelError) as info:
            asyncio.run(rr.rerank(QUERY, TEXTS))
    assert info.value.status_code == 503
    assert info.value.transient is True
    assert "HTTP 503" in str(info.value) and "down" in str(info.value)
    assert len(server.requests) == 3


def test_other_client_errors_are_fatal() -> None:
    with FakeRerankServer(style="tei", max_batch=2) as server:
        rr = http_reranker(server.url, api_style="tei", max_batch=10, max_retries=3)
        with pytest.raises(ModelError) as info:
            asyncio.run(rr.rerank(QUERY, TEXTS))
    assert info.value.status_code == 413
    assert info.value.transient is False
    assert "maximum allowed batch size 2" in str(info.value)
    assert len(server.requests) == 1


def test_timeout_is_transient_and_names_the_url() -> None:
    with FakeRerankServer() as server:
        server.script(*[ScriptedReply(delay_s=1.0)] * 2)
        rr = http_reranker(server.url, timeout_s=0.2, max_retries=1)
        started = time.perf_counter()
        with pytest.raises(ModelError) as info:
            asyncio.run(rr.rerank(QUERY, TEXTS))
        elapsed = time.perf_counter() - started
    assert info.value.transient is True
    assert "timed out" in str(info.value) and server.url in str(info.value)
    assert len(server.requests) == 2
    assert elapsed < 1.5


def test_unreachable_server_is_transient() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/rerank"
    with pytest.raises(ModelError) as info:
        asyncio.run(http_reranker(url, max_retries=1).rerank(QUERY, TEXTS))
    assert info.value.transient is True
    assert "cannot reach" in str(info.value) and url in str(info.value)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"<html>\nBad gateway page\n</html>", "not JSON"),
        (b'{"scores": [1, 2]}', "neither a list"),
        (b'[{"index": 9, "score": 0.5}]', "valid index"),
        (b'[{"index": 0, "score": "high"}]', "finite score"),
        (b'{"results": []}', "no scores"),
    ],
)
def test_unreadable_replies_are_fatal_model_errors(body: bytes, needle: str) -> None:
    with FakeRerankServer() as server:
        server.script(ScriptedReply(body=body), ScriptedReply(body=body))
        rr = http_reranker(server.url, api_style="cohere", max_retries=2)
        with pytest.raises(ModelOutputError) as info:
            asyncio.run(rr.rerank(QUERY, TEXTS))
    assert isinstance(info.value, ModelError)
    assert info.value.transient is False
    assert needle in str(info.value) and server.url in str(info.value)
    assert "\n" not in str(info.value)
    assert len(server.requests) == 1


def test_parse_scores_reads_both_shapes_and_either_score_key() -> None:
    tei = [{"index": 1, "score": 0.9}, {"index": 0, "score": 0.1}]
    cohere = {"results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "score": 0.1}]}
    assert parse_scores(tei, 2, source="u") == [0.1, 0.9]
    assert parse_scores(cohere, 2, source="u") == [0.1, 0.9]
    assert parse_scores(tei, 3, source="u") == [0.1, 0.9, pytest.approx(-0.9)]
    with pytest.raises(ModelOutputError):
        parse_scores([{"index": True, "score": 0.1}], 2, source="u")


# ----------------------------------------------------------------------------- config, registry


def test_registry_and_bootstrap_build_the_configured_reranker(tmp_path: Path) -> None:
    assert RERANKERS.get("none")(RerankConfig()) is None
    config = UkrConfig(
        query={"rerank": {"kind": "http", "url": "http://127.0.0.1:9/rerank", "model": "m",
                          "api_key": "k", "api_style": "tei", "max_batch": 8}}
    )
    check_config(config)
    app = build_app(config, tmp_path)
    try:
        assert isinstance(app.reranker, HttpReranker)
        assert app.reranker.api_style == "tei"
        assert app.reranker.max_batch == 8
        assert app.reranker.model_id == "http:m@http://127.0.0.1:9/rerank"
    finally:
        asyncio.run(app.aclose())
    default_app = build_app(UkrConfig(), tmp_path / "other")
    try:
        assert default_app.reranker is None
    finally:
        asyncio.run(default_app.aclose())


def test_unknown_kind_is_a_configuration_error_listing_the_kinds() -> None:
    config = UkrConfig(query={"rerank": {"kind": "magic"}})
    with pytest.raises(ConfigurationError) as info:
        check_config(config)
    assert info.value.field == "query.rerank.kind"
    for name in ("cross_encoder", "http", "none"):
        assert name in str(info.value)


def test_kind_specific_fields_are_validated(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="model_path"):
        RerankConfig(kind="cross_encoder")
    with pytest.raises(ValidationError, match="url"):
        RerankConfig(kind="http")
    with pytest.raises(ValidationError, match="url"):
        RerankConfig(kind="HTTP", url="ftp://example.com/rerank")
    assert RerankConfig(kind="http", url="https://api.cohere.com/v2/rerank").url
    (tmp_path / "ukr.yaml").write_text("query:\n  rerank:\n    kind: http\n", encoding="utf-8")
    with pytest.raises(ConfigurationError) as info:
        load_config(tmp_path)
    assert "query.rerank" in str(info.value) and "url" in str(info.value)


# ----------------------------------------------------------------------------- cross-encoder

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "sat", "on", "mat",
    "river", "bank", "money", "where", "did", "sit", "was", "nothing", "relevant", "here",
    "ran", "to", "in", "of", "and", "is", "what",
]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seeded random-weight BERT cross-encoder (1 label) saved with save_pretrained."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny-ce")
    vocab = path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), model_max_length=32)
    torch.manual_seed(1234)
    config = BertConfig(
        vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=32, num_labels=1,
    )
    model = BertForSequenceClassification(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def direct_logits(path: Path, query: str, texts: list[str]) -> list[float]:
    """The model's logits from a plain transformers forward pass."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = BertForSequenceClassification.from_pretrained(path, local_files_only=True).eval()
    enc = tokenizer([query] * len(texts), texts, padding=True, truncation=True,
                    return_tensors="pt")
    with torch.no_grad():
        return [float(x) for x in model(**enc).logits[:, 0]]


def test_cross_encoder_returns_the_models_raw_logits(tiny_cross_encoder: Path) -> None:
    config = RerankConfig(kind="cross_encoder", model_path=str(tiny_cross_encoder))
    rr = RERANKERS.get("cross_encoder")(config)
    assert isinstance(rr, CrossEncoderReranker)

    async def run() -> tuple[list[float], list[float], list[float]]:
        first = await rr.rerank(QUERY, TEXTS)
        again = await rr.rerank(QUERY, TEXTS)
        subset = await rr.rerank(QUERY, [TEXTS[4], TEXTS[1]])
        return first, again, subset

    first, again, subset = asyncio.run(run())
    assert len(first) == len(TEXTS)
    assert all(isinstance(s, float) and math.isfinite(s) for s in first)
    assert first == again  # deterministic
    assert len(set(first)) > 1  # the texts are told apart
    assert first == pytest.approx(direct_logits(tiny_cross_encoder, QUERY, TEXTS), abs=1e-5)
    # a text's score does not depend on the other texts in the call
    assert subset == pytest.approx([first[4], first[1]], abs=1e-5)
    assert rr.model_id == f"cross_encoder:{tiny_cross_encoder.name}"


def test_cross_encoder_truncates_texts_longer_than_the_model(tiny_cross_encoder: Path) -> None:
    rr = CrossEncoderReranker(tiny_cross_encoder)
    long_text = " ".join(["the cat sat on the mat"] * 40)  # 240 words, model takes 32 tokens
    scores = asyncio.run(rr.rerank(QUERY, [long_text, "money"]))
    assert len(scores) == 2 and all(math.isfinite(s) for s in scores)


def test_cross_encoder_bad_paths_are_configuration_errors(tmp_path: Path) -> None:
    not_a_model = tmp_path / "empty"
    not_a_model.mkdir()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"hello": 1}', encoding="utf-8")
    for path in (tmp_path / "missing", not_a_model, broken):
        rr = RERANKERS.get("cross_encoder")(
            RerankConfig(kind="cross_encoder", model_path=str(path))
        )
        assert rr is not None
        assert asyncio.run(rr.rerank(QUERY, [])) == []  # nothing loaded for no texts
        with pytest.raises(ConfigurationError) as info:
            asyncio.run(rr.rerank(QUERY, TEXTS))
        assert info.value.field == "query.rerank.model_path"
        assert str(path) in str(info.value)
        assert "\n" not in str(info.value)
