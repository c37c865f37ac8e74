"""The whole-query deadline (`query.deadline_s`) against a model that answers after 30 s.

For each of `naive`, `global` (one map batch answers at once, the others are slow), `drift`
and `auto` (router and query processing), one question on the graph test fixture (seven
passages, the bundled MiniLM) with a 2 s deadline, against the OpenAI-compatible test server
(`tests/support/openai_server.py`) on 127.0.0.1. Prints how long each query took, what it
answered with and how many model calls the deadline cut. Without the deadline each query
would wait 30 s per model call.

Usage:  python benchmarks/bench_query_deadline.py [--deadline SECONDS] [--slow SECONDS]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.answer_chain import llm
from tests.support.graph_fixture import REPORT_TEXT, graph_app
from tests.support.openai_server import FakeOpenAIServer, Scripted

from unified_kg_rag.config.models import UkrConfig

QUESTION = "Where was Marie Curie born?"
CASES: dict[str, dict[str, Any]] = {
    "naive": {"llm_router": False},
    "global": {"llm_router": False, "global_search": {"map_context_tokens": 60, "level": 1}},
    "drift": {"llm_router": False},
    "auto": {},
}


async def one(strategy: str, query: dict[str, Any], deadline: float, slow: float) -> None:
    with FakeOpenAIServer() as server:
        if strategy == "global":  # the batch holding the Curies' report answers at once
            point = {"description": "Marie Curie was born in Warsaw", "score": 90,
                     "reports": [1]}  # fmt: skip
            server.script(Scripted(match=f"# {REPORT_TEXT['curies'][0]}\n",
                                   reply=json.dumps({"points": [point]})))  # fmt: skip
        server.script(*[Scripted(delay_s=slow) for _ in range(40)])
        config = UkrConfig(llm=llm(server, max_concurrency=8), query=query)  # type: ignore[arg-type]
        async with graph_app(Path(tempfile.mkdtemp()), config) as fx:
            chain = fx.chain(fx.app.chat_model, **query)
            started = time.perf_counter()
            out = await chain.ainvoke(QUESTION, strategy=strategy, deadline_s=deadline)
            elapsed = time.perf_counter() - started
    meta = out.metadata
    print(f"{strategy:7s} {elapsed:6.2f} s  answer {out.answer_kind:10s} sources "
          f"{len(out.sources):2d}  deadline_hit {meta['deadline_hit']}  cut calls "
          f"{meta.get('deadline_cut_calls', 0)}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deadline", type=float, default=2.0, help="query.deadline_s")
    parser.add_argument("--slow", type=float, default=30.0, help="seconds per model reply")
    args = parser.parse_args()
    print(f"deadline {args.deadline:g} s, every slow model reply takes {args.slow:g} s")
    for strategy, query in CASES.items():
        asyncio.run(one(strategy, query, args.deadline, args.slow))


if __name__ == "__main__":
    main()
