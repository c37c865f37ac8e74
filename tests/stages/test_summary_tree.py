"""The `raptor` summary tree on real SQLite files: built, reused, pruned, and its edge corpora.

LLM summaries come from the real OpenAI-compatible test server on 127.0.0.1 (a summary that
names the passages it read, so a test can tell which children a node summarised); extractive
summaries use the real bundled embedder.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.stages.test_lazy_and_ppr import TOPICS
from tests.support.openai_server import FakeOpenAIServer, Scripted
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE, METHODOLOGIES_KEY
from unified_kg_rag.domain.models import Collection
from unified_kg_rag.domain.tree.nodes import SummaryTree
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.ingestion.status import describe_index
from unified_kg_rag.ingestion.summary_tree import load_summary_tree

pytestmark = pytest.mark.integration

RAPTOR = {"target_children": 2, "min_nodes_to_cluster": 1, "min_level_shrink": 0.0}


def cluster_reply(body: dict[str, Any]) -> str:
    """A summary naming the first words of each passage it was given (deterministic)."""
    prompt = "\n".join(m.get("content", "") for m in body["messages"] if m["role"] == "user")
    passages = re.findall(r"^\[\d+\] (\S+ \S+)", prompt, flags=re.M)
    digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
    return f"Summary {digest} of {len(passages)} passages: " + "; ".join(passages) + "."


def _config(server: FakeOpenAIServer | None = None, **raptor: Any) -> UkrConfig:
    llm: dict[str, Any] = {"kind": "none"}
    if server is not None:
        llm = {"kind": "openai", "retry_initial_s": 0.01, "retry_max_s": 0.02, "max_retries": 1,
               "openai": {"base_url": server.base_url, "api_key": "k"}}
    return UkrConfig(
        llm=llm, graph={"raptor": {**RAPTOR, **raptor}},
        indexing={"methodologies": ["raptor"], "max_delete_share": 1.0},
    )  # type: ignore[arg-type]


def _pipeline(app: App) -> IndexPipeline:
    return IndexPipeline(
        app.index(), embedder=app.embedder, chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers, config=app.config, chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer,
    )  # fmt: skip


def _corpus(root: Path, docs: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


async def _tree(app: App) -> SummaryTree:
    tree = await load_summary_tree(app.index())
    assert tree is not None
    return tree


async def _check_consistent(app: App, tree: SummaryTree) -> None:
    """The search collection holds exactly the tree's nodes; lineage is the leaves below."""
    stores = app.index()
    assert sorted(await stores.search.ids(Collection.SUMMARY_NODES)) == sorted(
        n.id for n in tree.nodes
    )
    units = set(await stores.search.ids(Collection.TEXT_UNITS))
    by_id = tree.by_id()
    for node in tree.nodes:
        below: set[str] = set()
        for child in node.child_ids:
            below |= set(by_id[child].text_unit_ids) if child in by_id else {child}
        assert set(node.text_unit_ids) == below
        assert below <= units


def test_an_llm_free_tree_is_built_recorded_and_skipped_when_unchanged(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "c", TOPICS)

    async def main() -> None:
        async with build_app(_config(), tmp_path / "p") as app:
            report = await _pipeline(app).run([corpus])
            tree_report = report.summary_tree
            assert tree_report is not None and tree_report.extractive
            assert tree_report.skipped_reason == ""
            tree = await _tree(app)
            await _check_consistent(app, tree)
            assert tree.levels >= 2 and not tree.partial
            assert tree_report.summaries_written == len(tree.nodes)
            # six passages, about two a cluster (k = 3): at least two level-1 summaries
            assert 2 <= tree_report.nodes_per_level[1] <= 3
            top = max(tree.nodes, key=lambda n: n.n_leaves)
            assert top.n_leaves == len(TOPICS)
            # extractive: every summary sentence is a sentence of its passages
            texts = " ".join(TOPICS.values())
            for node in tree.nodes:
                assert node.extractive and node.text
                for sentence in re.split(r"(?<=\.) ", node.text):
                    assert sentence in texts
            held = await app.index().records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY)
            assert json.loads(held or "") == ["raptor"]
            again = await _pipeline(app).run([corpus])
            assert again.summary_tree is not None
            assert again.summary_tree.skipped_reason == "unchanged since the last build"
            assert await _tree(app) == tree

    asyncio.run(main())


def test_llm_summaries_are_reused_and_a_deleted_documents_summaries_go(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "c", TOPICS)

    async def main() -> None:
        with FakeOpenAIServer(reply=cluster_reply) as server:
            async with build_app(_config(server), tmp_path / "p") as app:
                first = await _pipeline(app).run([corpus])
                assert first.summary_tree is not None and not first.summary_tree.extractive
                tree = await _tree(app)
                calls = len(server.requests)
                assert calls == first.summary_tree.summaries_written == len(tree.nodes)
                assert all(n.text.startswith("Summary ") for n in tree.nodes)
                bread = {u for n in tree.nodes for u in n.text_unit_ids}
                records = await app.index().registry.list_records()
                gone = next(r for r in records if r.path == "bread.txt").text_unit_ids
                citing = {n.id for n in tree.citing(gone)}
                assert citing and bread

                (corpus / "bread.txt").unlink()
                second = await _pipeline(app).run([corpus], confirm_deletions=True)
                pruned = await _tree(app)
                await _check_consistent(app, pruned)
                assert not pruned.citing(gone)
                assert citing.isdisjoint(n.id for n in pruned.nodes)
                st = second.summary_tree
                assert st is not None and st.nodes_removed >= len(citing)
                # only the clusters that changed cost a call (which ones stay is k-means's
                # call on five points; reuse itself is pinned by the partial-tree test)
                assert len(server.requests) - calls == st.summaries_written
                assert st.summaries_written + st.summaries_reused == len(pruned.nodes)

    asyncio.run(main())


def test_a_failed_summary_marks_the_tree_partial_and_the_next_run_retries_only_it(
    tmp_path: Path,
) -> None:
    corpus = _corpus(tmp_path / "c", TOPICS)

    async def main() -> None:
        with FakeOpenAIServer(reply=cluster_reply) as server:
            # the cluster holding the sourdough passages fails every attempt once
            server.script(Scripted(status=400, message="bad request", match="Sourdough",
                                   times=1))
            async with build_app(_config(server), tmp_path / "p") as app:
                first = await _pipeline(app).run([corpus])
                st = first.summary_tree
                assert st is not None and st.partial and st.summaries_failed == 1
                assert first.exit_code == 3  # a failed summary fails the run, like a report
                tree = await _tree(app)
                assert tree.partial
                status = await describe_index(app.index())
                assert status.summary_tree is not None and status.summary_tree.endswith(
                    "; partial: failed summaries are retried by the next `ukr index`")
                await _check_consistent(app, tree)
                second = await _pipeline(app).run([corpus])
                st2 = second.summary_tree
                assert st2 is not None and not st2.partial
                assert second.exit_code == 0
                assert st2.summaries_reused >= 1 and st2.summaries_written >= 1
                assert st2.summaries_written < st.summaries_written + 1
                assert not (await _tree(app)).partial

    asyncio.run(main())


@pytest.mark.parametrize("status", [400, 503])
def test_a_model_failing_every_summary_stops_the_tree_after_a_probe(
    tmp_path: Path, status: int
) -> None:
    corpus = _corpus(tmp_path / "c", dict(list(TOPICS.items())[:6]))

    async def main() -> None:
        with FakeOpenAIServer(reply=cluster_reply) as server:
            server.script(Scripted(status=status, message="down", times=None))
            async with build_app(_config(server), tmp_path / "p") as app:
                report = await _pipeline(app).run([corpus])
                st = report.summary_tree
                assert st is not None
                # no call was ever answered: a known-good request is sent, fails too, and
                # the stage stops (a server that is down is not three clusters' failures)
                assert "a known-good request failed too" in st.error
                assert report.exit_code == 1
                prompts = server.requests_to("/chat/completions")
                probes = [r for r in prompts if "single word OK" in json.dumps(r.body)]
                assert len(probes) >= 1
                # three clusters and one probe at most, each with its one retry (503)
                assert len(prompts) <= 4 * (2 if status == 503 else 1)
                assert await load_summary_tree(app.index()) is None

    asyncio.run(main())


def test_a_model_refusing_access_stops_the_tree_keeps_it_and_exits_1(tmp_path: Path) -> None:
    docs = dict(list(TOPICS.items())[:4])
    corpus = _corpus(tmp_path / "c", docs)

    async def main() -> None:
        with FakeOpenAIServer(reply=cluster_reply) as server:
            async with build_app(_config(server), tmp_path / "p") as app:
                first = await _pipeline(app).run([corpus])
                assert first.exit_code == 0
                before = await _tree(app)
                assert before.nodes
                (corpus / "extra.txt").write_text(
                    "The ferry to Orsa leaves at noon. Tickets are sold on board.",
                    encoding="utf-8",
                )
                server.script(Scripted(status=401, message="bad key", times=None))
                second = await _pipeline(app).run([corpus])
                st = second.summary_tree
                assert st is not None and "bad key" in st.error
                assert st.skipped_reason.startswith("stopped: ")
                assert second.exit_code == 1  # stopped, as a graph build that is refused
                assert (await _tree(app)).nodes == before.nodes  # nothing stored was lost

    asyncio.run(main())


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_tiny_corpora_build_or_skip_with_a_message(tmp_path: Path, n: int) -> None:
    docs = dict(list(TOPICS.items())[:n])
    corpus = _corpus(tmp_path / "c", docs)

    async def main() -> IndexReport:
        async with build_app(_config(min_leaves=3), tmp_path / "p") as app:
            report = await _pipeline(app).run([corpus])
            tree = await _tree(app)
            await _check_consistent(app, tree)
            if n < 3:
                assert tree.nodes == ()
                status = await describe_index(app.index())
                assert status.summary_tree is not None
                assert status.summary_tree.startswith("no summary (too few text units")
            else:
                assert max(x.n_leaves for x in tree.nodes) == 3  # a root over all three
            return report

    report = asyncio.run(main())
    st = report.summary_tree
    assert st is not None
    if n < 3:
        assert st.skipped_reason == (
            f"{n} text unit(s): a summary tree needs at least 3 (graph.raptor.min_leaves)"
        )
    else:
        assert st.skipped_reason == "" and st.summaries_written >= 1


def test_identical_passages_and_one_huge_document(tmp_path: Path) -> None:
    same = "The lighthouse keeper lit the lamp at dusk. Ships passed the rocks safely."
    docs = {f"copy{i}.txt": same for i in range(5)}
    docs["huge.txt"] = " ".join(
        f"Chapter {i} tells how the river town of Vell{i % 7} traded salt and grain."
        for i in range(400)
    )
    corpus = _corpus(tmp_path / "c", docs)

    async def main() -> None:
        async with build_app(_config(max_cluster_tokens=2000, target_children=6),
                             tmp_path / "p") as app:  # fmt: skip
            report = await _pipeline(app).run([corpus])
            assert report.exit_code == 0
            tree = await _tree(app)
            await _check_consistent(app, tree)
            units = await app.index().search.count(Collection.TEXT_UNITS)
            assert units > 10
            covered = {u for n in tree.nodes for u in n.text_unit_ids}
            assert len(covered) == units  # every passage is under a summary
            records = await app.index().registry.list_records()
            copies = {u for r in records if r.path.startswith("copy") for u in r.text_unit_ids}
            assert len(copies) == 5  # one unit per copy (ids hold the document)
            for node in tree.nodes:
                assert node.n_tokens <= app.config.graph.raptor.max_summary_tokens

    asyncio.run(main())
