"""`ukr eval prepare hipporag` and `ukr eval` on a small MuSiQue-shaped set, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified_kg_rag.cli.app import app
from unified_kg_rag.evaluation.dataset import load_dataset
from unified_kg_rag.evaluation.metrics import answer_in_text, normalize_answer, recall_at_k
from unified_kg_rag.util.errors import UsageError

pytestmark = pytest.mark.integration

CORPUS = [
    {"title": "Marie Curie", "text": "Marie Curie won the Nobel Prize in Physics in 1903."},
    {"title": "Pierre Curie", "text": "Pierre Curie was born in Paris and married Marie Curie."},
    {"title": "Paris", "text": "Paris is the capital of France, on the river Seine."},
    {"title": "Seine", "text": "The Seine flows through Paris into the English Channel."},
    {"title": "Paris", "text": "Paris also hosted the Summer Olympics in 1900 and 1924."},
]
QUESTIONS = [
    {
        "id": "q1",
        "question": "In which city was the husband of Marie Curie born?",
        "answer": "Paris",
        "answer_aliases": ["Paris, France"],
        "question_decomposition": [{"id": 1, "question": "husband of Marie Curie"},
                                   {"id": 2, "question": "#1 born in"}],
        "paragraphs": [
            {"idx": 0, "title": "Pierre Curie", "paragraph_text": CORPUS[1]["text"], "is_supporting": True},
            {"idx": 1, "title": "Marie Curie", "paragraph_text": CORPUS[0]["text"], "is_supporting": True},
            {"idx": 2, "title": "Seine", "paragraph_text": CORPUS[3]["text"], "is_supporting": False},
        ],
    },
    {  # 2Wiki/HotpotQA style: supporting facts by title; "Paris" is ambiguous (two passages)
        "_id": "q2",
        "question": "Which river flows through the city that hosted the 1924 Olympics?",
        "answer": "Seine",
        "supporting_facts": [["Seine", 0], ["Paris", 0]],
        "type": "compositional",
    },
]


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    (tmp_path / "q.json").write_text(json.dumps(QUESTIONS), "utf-8")
    (tmp_path / "c.json").write_text(json.dumps(CORPUS), "utf-8")
    result = CliRunner().invoke(
        app,
        ["eval", "prepare", "hipporag", str(tmp_path / "q.json"), str(tmp_path / "c.json"),
         "--out", str(tmp_path / "data"), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["passages"] == 5 and report["questions"] == 2
    assert report["unmatched_supporting"] == 1  # the ambiguous "Paris" title
    return tmp_path


def test_prepare_writes_one_file_per_passage_and_the_dataset(prepared: Path) -> None:
    files = sorted(p.name for p in (prepared / "data" / "corpus").iterdir())
    assert files == ["00000.md", "00001.md", "00002.md", "00003.md", "00004.md"]
    assert (prepared / "data/corpus/00001.md").read_text() == f"# Pierre Curie\n\n{CORPUS[1]['text']}\n"
    items = load_dataset(prepared / "data" / "dataset.jsonl")
    assert [i.id for i in items] == ["q1", "q2"]
    assert items[0].supporting == ["00001", "00000"]
    assert items[0].answers == ["Paris", "Paris, France"]
    assert items[1].supporting == ["00003"]
    assert [i.category for i in items] == ["2-hop", "compositional"]  # hops, or 2Wiki's type


def test_eval_json_has_the_documented_keys_and_real_values(prepared: Path) -> None:
    runner = CliRunner()
    project = prepared / "proj"
    index = runner.invoke(app, ["index", str(prepared / "data" / "corpus"), "-C", str(project), "-q"])
    assert index.exit_code == 0, index.output
    result = runner.invoke(
        app, ["eval", str(prepared / "data" / "dataset.jsonl"), "-C", str(project), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    run_dir = Path(report["run_dir"])
    assert run_dir.parent == project / ".ukr" / "eval"  # the default run folder
    assert report["baseline"] == "auto"  # query.strategy
    (arm,) = report["arms"]
    assert (arm["arm"], arm["questions"], arm["rows"], arm["failed"]) == ("auto", 2, 2, 0)
    metrics = arm["metrics"]
    for key in ("recall@2", "recall@5", "recall@10", "answer_in_context"):
        assert key in metrics and metrics[key]["n"] == 2
    # five passages in all: every supporting passage is within the first 5 (and 10)
    assert metrics["recall@5"]["mean"] == 1.0 and metrics["recall@10"]["mean"] == 1.0
    assert 0.0 <= metrics["recall@2"]["mean"] <= 1.0
    assert metrics["answer_in_context"]["mean"] == 1.0
    assert arm["cost"]["latency_ms_p95"] >= arm["cost"]["latency_ms_p50"] > 0
    assert report["deltas"] == []  # one arm: nothing to compare
    saved = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert [r["question_id"] for r in saved] == ["q1", "q2"]
    # auto: the index holds the lazy concept graph
    # auto's rule: q2 chains through "the city that hosted ..." (multi-hop): `iterative`
    assert [r["strategy"] for r in saved] == ["ppr", "iterative"]


def test_eval_retrieval_only_and_table_output(prepared: Path) -> None:
    runner = CliRunner()
    project = prepared / "proj"
    runner.invoke(app, ["index", str(prepared / "data" / "corpus"), "-C", str(project), "-q"])
    result = runner.invoke(
        app, ["eval", str(prepared / "data" / "dataset.jsonl"), "-C", str(project),
              "--retrieval-only", "--mode", "lexical", "--limit", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "recall@5" in result.stdout and "1 questions" in result.stdout


def test_bad_dataset_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"question": "ok"}\n{"answers": []}\n', "utf-8")
    with pytest.raises(UsageError, match=r"d\.jsonl:2: question"):
        load_dataset(path)
    path.write_text('{"question": "ok"}\nnot json\n', "utf-8")
    with pytest.raises(UsageError, match=r"d\.jsonl:2: not JSON"):
        load_dataset(path)
    result = CliRunner().invoke(app, ["eval", str(path), "-C", str(tmp_path)])
    assert result.exit_code == 2 and "d.jsonl:2" in result.stderr


def test_metrics() -> None:
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert answer_in_text(["Paris"], "He was born in Paris, France.")
    assert not answer_in_text(["Paris"], "Parisian cafés")  # whole words only
    docs = [{"a"}, {"b", "b.md"}, {"c"}]
    assert recall_at_k(docs, ["b", "c"], 2) == 0.5
    assert recall_at_k(docs, ["b", "c"], 3) == 1.0
    assert recall_at_k(docs, [], 3) == 0.0


def test_prepare_refuses_a_non_empty_corpus_folder_without_force(prepared: Path) -> None:
    runner = CliRunner()
    args = ["eval", "prepare", "hipporag", str(prepared / "q.json"), str(prepared / "c.json"),
            "--out", str(prepared / "data")]  # fmt: skip
    (prepared / "data" / "corpus" / "99999.md").write_text("# Stale\n\nleft over", "utf-8")
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "--force" in refused.stderr
    replaced = runner.invoke(app, [*args, "--force"])
    assert replaced.exit_code == 0, replaced.output
    assert not (prepared / "data" / "corpus" / "99999.md").exists()
    assert len(list((prepared / "data" / "corpus").iterdir())) == 5


def test_numeric_ids_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": 5, "question": "q?"}\n', "utf-8")
    assert load_dataset(path)[0].id == "5"
