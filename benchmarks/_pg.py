"""Helpers of bench_postgres.py: a throwaway PostgreSQL server, plan capture, synthetic data.

- `start_postgres`: a private PostgreSQL 16 + pgvector server from the ``pgserver`` wheel
  (offline, Unix socket, data in a temporary folder), stopped when the process exits.
- `server_settings`: the server settings that matter for the figures (memory, parallelism).
- `capture_plans`: while active, every search statement the PostgreSQL adapter runs is first
  run under ``EXPLAIN (ANALYZE, BUFFERS)`` and the plan kept (the adapter is not changed).
- `ukr`, `environment`: run the CLI in a child process; set ``UKR_*`` variables in-process.
- `index_schema`, `catalog_size_mib`, `drop_catalog`, `vacuum_analyze`: catalog bookkeeping.
- `SyntheticCorpus`: seeded texts drawn from a Zipf-distributed synthetic vocabulary, their
  document-frequency postings (to count how many texts a query matches) and query texts.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

SETTINGS = (
    "server_version", "shared_buffers", "work_mem", "maintenance_work_mem",
    "effective_cache_size", "max_parallel_workers_per_gather",
    "max_parallel_maintenance_workers", "jit", "synchronous_commit",
)  # fmt: skip

_SEARCH_PREFIXES = ("SELECT R.ID", "WITH ST AS", "WITH M AS")


def start_postgres(data_dir: Path) -> tuple[str, Any]:
    """Start (or reuse) a pgserver instance in ``data_dir``; return ``(url, handle)``.

    Keep the handle alive: the server stops when the last handle goes (at exit).
    """
    from pgserver import get_server  # type: ignore[attr-defined]

    server = get_server(str(data_dir), cleanup_mode="stop")
    return str(server.get_uri()), server


def server_settings(url: str) -> dict[str, str]:
    """Return the values of `SETTINGS` and the pgvector version on the server at ``url``."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        out = {}
        for name in SETTINGS:
            row = conn.execute(f"SHOW {name}").fetchone()
            out[name] = str(row[0]) if row else "?"
        row = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector' UNION ALL "
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector' LIMIT 1"
        ).fetchone()
        out["pgvector"] = str(row[0]) if row else "missing"
    return out


def ukr(args: list[str], env_extra: dict[str, str]) -> tuple[str, float, float]:
    """Run ``ukr ARGS`` in a child process; return ``(stdout, wall s, child peak RSS MiB)``.

    The child sees no ``UKR_*`` variable of this process, only ``env_extra``. Exits on failure.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")} | env_extra
    cmd = [sys.executable, "-m", "unified_kg_rag.cli", *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"ukr {args[0]} failed ({proc.returncode}): {err.read().decode()[-2000:]}")
        return out.read().decode(), wall, usage.ru_maxrss / 1024


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the duration (restored afterwards)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def index_schema(url: str, catalog: str, index: str) -> str:
    """Return the schema holding ``index`` in ``catalog``."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(sql.SQL("SELECT schema_name FROM {}.indexes WHERE name = %s").format(
            sql.Identifier(catalog)), (index,)).fetchone()
    if row is None:
        raise LookupError(f"no index {index!r} in catalog {catalog!r}")
    return str(row[0])


def _catalog_schemas(conn: Any, catalog: str) -> list[str]:
    rows = conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname = %s OR nspname LIKE %s",
        (catalog, catalog.replace("_", "\\_") + "\\_%"),
    ).fetchall()
    return [str(r[0]) for r in rows]


def catalog_size_mib(url: str, catalog: str) -> float:
    """Return the on-disk size (tables, indexes, TOAST) of ``catalog`` and its index schemas."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c "
            "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND n.nspname = ANY(%s)",
            (_catalog_schemas(conn, catalog),),
        ).fetchone()
    return round(float(row[0]) / 2**20, 1) if row else 0.0


def drop_catalog(url: str, catalog: str) -> None:
    """Drop ``catalog`` and the schemas of its indexes."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        for schema in _catalog_schemas(conn, catalog):
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def vacuum_analyze(url: str, schema: str) -> float:
    """``VACUUM (ANALYZE)`` the search tables of ``schema``; return the seconds it took."""
    import psycopg
    from psycopg import sql

    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("search_records", "lexical_stats", "collection_stats"):
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}.{}").format(
                sql.Identifier(schema), sql.Identifier(table)))
    return round(time.perf_counter() - started, 1)


@contextlib.contextmanager
def capture_plans() -> Iterator[list[str]]:
    """Collect ``EXPLAIN (ANALYZE, BUFFERS)`` of the adapter's search statements.

    Yields a list that receives one plan text per search statement run while the context is
    active (the statement then runs normally). Benchmark-only: it patches
    ``psycopg.AsyncConnection.execute`` for the duration.
    """
    from psycopg import AsyncConnection, sql

    plans: list[str] = []
    original = AsyncConnection.execute

    async def execute(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        text = query.as_string(self) if isinstance(query, sql.Composable) else str(query)
        if text.lstrip().upper().startswith(_SEARCH_PREFIXES):
            cur = await original(self, "EXPLAIN (ANALYZE, BUFFERS) " + text, params)
            plan = "\n".join(str(r[0]) for r in await cur.fetchall())
            plans.append(re.sub(r"'\[[^\]]{200,}\]'", "'[...]'", plan))  # query vectors
        return await original(self, query, params, **kwargs)

    AsyncConnection.execute = execute  # type: ignore[method-assign]
    try:
        yield plans
    finally:
        AsyncConnection.execute = original  # type: ignore[method-assign]


def _vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    from unified_kg_rag.domain.text.analysis import QUERY_STOPWORDS

    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: dict[str, None] = {}
    while len(words) < size:
        n = int(rng.integers(2, 5))
        word = "".join(syllables[i] for i in rng.integers(0, len(syllables), n))
        if word not in QUERY_STOPWORDS:
            words[word] = None
    return list(words)


@dataclass
class SyntheticCorpus:
    """``n`` seeded texts of 60-120 words from a Zipf (s = 1) vocabulary of ``vocab_size`` words.

    Attributes:
        vocab: the words, most frequent first (rank 1 = index 0).
        tokens: every text's word indices, concatenated (int32).
        offsets: ``tokens[offsets[i]:offsets[i + 1]]`` is text ``i``.
    """

    vocab: list[str]
    tokens: NDArray[np.int32]
    offsets: NDArray[np.int64]

    @classmethod
    def generate(cls, n: int, *, vocab_size: int = 30_000, seed: int = 7) -> SyntheticCorpus:
        rng = np.random.default_rng(seed)
        vocab = _vocabulary(vocab_size, rng)
        weights = 1.0 / np.arange(1, vocab_size + 1)
        lengths = rng.integers(60, 121, size=n)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        tokens = rng.choice(vocab_size, size=int(offsets[-1]), p=weights / weights.sum())
        return cls(vocab, tokens.astype(np.int32), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def text(self, i: int) -> str:
        return " ".join(self.vocab[t] for t in self.tokens[self.offsets[i]:self.offsets[i + 1]])

    def queries(self, n: int, *, seed: int, min_rank: int = 0) -> list[list[int]]:
        """Return ``n`` queries of 3-5 distinct word indices taken from random stored texts.

        With ``min_rank`` > 0 the words of the ``min_rank`` most frequent ranks are never
        taken (as stopword removal would drop the head of a natural vocabulary).
        """
        rng = np.random.default_rng(seed)
        out: list[list[int]] = []
        while len(out) < n:
            i = int(rng.integers(0, len(self)))
            words = np.unique(self.tokens[self.offsets[i]:self.offsets[i + 1]])
            words = words[words >= min_rank]
            if len(words) >= 3:
                size = min(int(rng.integers(3, 6)), len(words))
                out.append([int(w) for w in rng.choice(words, size=size, replace=False)])
        return out

    def matched_texts(self, queries: list[list[int]]) -> list[int]:
        """Return, per query, how many texts contain at least one of its words."""
        n = len(self)
        docs = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.offsets))
        pairs = np.unique(self.tokens.astype(np.int64) * n + docs)
        starts = np.searchsorted(pairs, np.arange(len(self.vocab) + 1, dtype=np.int64) * n)
        counts = []
        for words in queries:
            parts = [pairs[starts[w]:starts[w + 1]] for w in words]
            counts.append(len(np.unique(np.concatenate(parts))))
        return counts
