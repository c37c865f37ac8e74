"""The bundled model runs without sentence-transformers, with the same vectors (issue 16
item 12: importing sentence-transformers cost a cold query about a fifth of its CPU)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from unified_kg_rag.adapters.embeddings.local import LocalEmbedder, bundled_model_path
from unified_kg_rag.adapters.embeddings.mean_pooling import MeanPoolingEncoder, simple_pipeline
from unified_kg_rag.config.models import EmbeddingsConfig

pytestmark = pytest.mark.integration

TEXTS = [
    "The barn owl hunts voles at night.",
    "Honey bees live in colonies; a queen lays the eggs.",
    "Le café de la rue Saint-Honoré sert une crème brûlée célèbre.",
    "서울특별시는 대한민국의 수도이며 가장 큰 도시이다.",
    "x",
    "lighthouse keeper lamp harbour tide " * 120,  # past the 256-token limit: truncated
]


def test_same_vectors_as_sentence_transformers() -> None:
    sentence_transformers = pytest.importorskip("sentence_transformers")
    path = bundled_model_path()
    limit = simple_pipeline(path)
    assert limit == 256
    ours = MeanPoolingEncoder(path, device="cpu", max_seq_length=limit).encode(TEXTS)
    reference = sentence_transformers.SentenceTransformer(
        str(path), device="cpu", local_files_only=True
    ).encode(TEXTS, convert_to_numpy=True, normalize_embeddings=True)
    assert ours.shape == reference.shape == (len(TEXTS), 384)
    assert ours.dtype == np.float32
    cosines = np.sum(ours * reference, axis=1)
    assert np.all(cosines > 0.99999), cosines
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_other_pipelines_are_left_to_sentence_transformers(tmp_path: Path) -> None:
    source = bundled_model_path()
    for name in ("modules.json", "sentence_bert_config.json"):
        (tmp_path / name).write_text((source / name).read_text("utf-8"), "utf-8")
    (tmp_path / "1_Pooling").mkdir()
    pooling = json.loads((source / "1_Pooling" / "config.json").read_text("utf-8"))
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling), "utf-8")
    assert simple_pipeline(tmp_path) == 256
    cls = {**pooling, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(cls), "utf-8")
    assert simple_pipeline(tmp_path) is None
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling), "utf-8")
    (tmp_path / "sentence_bert_config.json").write_text(
        '{"max_seq_length": 256, "do_lower_case": true}', "utf-8")
    assert simple_pipeline(tmp_path) is None
    (tmp_path / "modules.json").unlink()
    assert simple_pipeline(tmp_path) is None


_EMBED_ONCE = """
import asyncio, sys
from unified_kg_rag.adapters.embeddings.local import LocalEmbedder
from unified_kg_rag.config.models import EmbeddingsConfig
emb = LocalEmbedder(EmbeddingsConfig())
vector = asyncio.run(emb.embed_query("owls hunt voles"))
print(vector.shape[0], "sentence_transformers" in sys.modules, "sklearn" in sys.modules)
"""


def test_the_bundled_model_embeds_without_importing_sentence_transformers() -> None:
    done = subprocess.run([sys.executable, "-c", _EMBED_ONCE], capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["384", "False", "False"]


def test_local_embedder_uses_the_encoder_and_keeps_its_windows() -> None:
    emb = LocalEmbedder(EmbeddingsConfig(batch_size=2))
    long = "lighthouse keeper lamp harbour tide " * 200  # several 256-token windows
    vectors = asyncio.run(emb.embed_documents(["owls", long, ""]))
    assert isinstance(emb._model, MeanPoolingEncoder)
    assert vectors.shape == (3, 384) and not vectors[2].any()
    assert abs(float(np.linalg.norm(vectors[1])) - 1.0) < 1e-5
