"""`ukr eval` as a CI step: ``--fail-if`` gates (exit 4 exactly when one is violated, exit 2
for a gate naming an unknown arm or metric, before any answer), the judge-is-answer-model
warning and ``--retrieval-only`` with a judge, on a real index (the bundled embedder)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

from tests.support.eval_runs import invoke, prepare_and_index
from tests.support.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(dataset.jsonl, project)``: the MuSiQue-shaped set prepared and indexed (no LLM)."""
    return prepare_and_index(tmp_path_factory.mktemp("eval_gates"))


@pytest.fixture(scope="module")
def retrieval_run(setup: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved retrieval-only run of naive and ppr (both find every supporting passage)."""
    dataset, project = setup
    out = tmp_path_factory.mktemp("gates") / "run"
    result = invoke(["eval", str(dataset), "-C", str(project), "--out", str(out),
                     "--strategies", "naive,ppr", "--retrieval-only", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    comp = json.loads(result.stdout)
    assert [a["metrics"]["recall@5"]["mean"] for a in comp["arms"]] == [1.0, 1.0]
    return out


def gate(run_dir: Path, project: Path, *gates: str, json_out: bool = False) -> Result:
    """Re-score ``run_dir`` with these gates (no retrieval, no model call)."""
    args = ["eval", "--from-results", str(run_dir), "-C", str(project)]
    for g in gates:
        args += ["--fail-if", g]
    return invoke([*args, *(["--json"] if json_out else [])])


# ------------------------------------------------------------------------------- gates


def test_one_violated_gate_exits_4_and_prints_its_line(
    setup: tuple[Path, Path], retrieval_run: Path
) -> None:
    _, project = setup
    result = gate(retrieval_run, project, "ppr.recall@5 < naive.recall@5 + 0.03",
                  "ppr.recall@10 < 0.5")  # fmt: skip
    assert result.exit_code == 4, result.output
    out = " ".join(result.stdout.split())
    assert "gate FAILED: ppr.recall@5 < naive.recall@5 + 0.03 (1 < 1.03)" in out
    assert "gate ok: ppr.recall@10 < 0.5 (1 < 0.5 is false)" in out


def test_satisfied_gates_exit_0(setup: tuple[Path, Path], retrieval_run: Path) -> None:
    _, project = setup
    result = gate(retrieval_run, project, "ppr.recall@5 < naive.recall@5 - 0.03",
                  "delta(ppr,naive).recall@5.high < 0", json_out=True)  # fmt: skip
    assert result.exit_code == 0, result.output
    gates = json.loads(result.stdout)["gates"]
    assert [(g["expression"], g["violated"], g["left"], g["right"]) for g in gates] == [
        ("ppr.recall@5 < naive.recall@5 - 0.03", False, 1.0, 0.97),
        ("delta(ppr,naive).recall@5.high < 0", False, 0.0, 0.0),
    ]


def test_a_violated_gate_exits_4_in_json_too(
    setup: tuple[Path, Path], retrieval_run: Path
) -> None:
    _, project = setup
    result = gate(retrieval_run, project, "naive.recall@5 >= 1", json_out=True)
    assert result.exit_code == 4, result.output
    (only,) = json.loads(result.stdout)["gates"]
    assert (only["violated"], only["left"], only["right"]) == (True, 1.0, 1.0)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("hipporag.recall@5 < 0.5", 'unknown arm "hipporag"'),
        ("ppr.recal@5 < 0.5", 'unknown metric "recal@5" of arm "ppr"'),
        ("ppr.recall@5 = 0.5", 'unsupported operator "="'),
        ("ppr.judge/correctness < 0.5", 'unknown metric "judge/correctness" of arm "ppr"'),
        ("delta(naive,ppr).recall@5.low < 0",
         '"delta(naive,ppr).recall@5.low" in "delta(naive,ppr).recall@5.low < 0" is not '
         'computed: differences are ARM minus the baseline, "naive"'),
    ],
)
def test_a_gate_naming_an_unknown_arm_or_metric_exits_2_before_any_answer(
    setup: tuple[Path, Path], tmp_path: Path, expression: str, message: str
) -> None:
    dataset, project = setup
    out = tmp_path / "run"
    result = invoke(["eval", str(dataset), "-C", str(project), "--out", str(out),
                     "--strategies", "naive,ppr", "--fail-if", expression])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split()) and "--fail-if" in result.stderr
    assert not out.exists()  # nothing was run or written


def test_a_gate_on_a_saved_run_names_its_arms(
    setup: tuple[Path, Path], retrieval_run: Path
) -> None:
    _, project = setup
    before = (retrieval_run / "comparison.json").read_bytes()
    result = gate(retrieval_run, project, "local.recall@5 < 0.5")
    assert result.exit_code == 2
    assert 'unknown arm "local"' in result.stderr and "naive" in result.stderr
    # a retrieval-only run reports no answer metric
    answers = gate(retrieval_run, project, "naive.em < 0.5")
    assert answers.exit_code == 2
    assert 'unknown metric "em" of arm "naive"' in answers.stderr
    assert (retrieval_run / "comparison.json").read_bytes() == before


# ------------------------------------------------------------------------------ judges


@pytest.fixture
def answerer() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def llm(server: FakeOpenAIServer) -> dict[str, Any]:
    return {"kind": "openai", "max_retries": 0, "cache": False,
            "openai": {"base_url": server.base_url, "api_key": "k", "model": "answerer"}}  # fmt: skip


def test_retrieval_only_with_a_judge_exits_2(
    setup: tuple[Path, Path], tmp_path: Path, answerer: FakeOpenAIServer
) -> None:
    dataset, project = setup
    cfg = tmp_path / "ukr.yaml"
    cfg.write_text(yaml.safe_dump({"llm": llm(answerer)}), "utf-8")
    out = tmp_path / "run"
    result = invoke(["eval", str(dataset), "-C", str(project), "--out", str(out),
                     "--config", str(cfg), "--retrieval-only", "--judge", "correctness"])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "judges read answers; drop --retrieval-only" in result.stderr
    assert not out.exists() and answerer.requests == []


def correct(body: dict[str, Any]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in body["messages"])
    if "You grade answers to questions" in text:
        return json.dumps({"label": "correct", "reason": "same"})
    return "Paris [1]"


def test_the_answer_model_judging_its_own_answers_is_warned_about(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    dataset, project = setup
    with FakeOpenAIServer(reply=correct) as server:
        cfg = tmp_path / "ukr.yaml"
        cfg.write_text(yaml.safe_dump({"llm": llm(server), "query": {"llm_router": False}}),
                       "utf-8")  # fmt: skip
        out = tmp_path / "run"
        result = invoke(["eval", str(dataset), "-C", str(project), "--out", str(out),
                         "--config", str(cfg), "--strategies", "naive", "--limit", "1",
                         "--judge", "correctness"])  # fmt: skip
        model_id = f"openai:answerer@{server.base_url}"
    assert result.exit_code == 0, result.output
    warning = " ".join(result.stderr.split())
    assert f"warning: the judge is the answer model ({model_id})" in warning
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["judge_is_answer_model"] is True and manifest["judge_model"] == model_id
    comp = json.loads((out / "comparison.json").read_text())
    assert comp["arms"][0]["metrics"]["judge/correctness"]["mean"] == 1.0
    assert any("judge is the answer model" in w for w in comp["warnings"])


# ------------------------------------------------------------------ --from-results inputs


def test_from_results_reads_the_runs_dataset_from_any_folder(
    setup: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset, project = setup
    copy = tmp_path / "data" / "questions.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(dataset.read_bytes())
    cfg = tmp_path / "ukr.yaml"
    cfg.write_text(yaml.safe_dump({"query": {"top_k": 20}}), "utf-8")
    monkeypatch.chdir(copy.parent)
    result = invoke(["eval", "questions.jsonl", "-C", str(project), "--out", "../run",
                     "--config", str(cfg), "--strategies", "naive", "--retrieval-only"])  # fmt: skip
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "run"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["dataset"] == str(copy)  # absolute, whatever the folder it ran in
    assert manifest["top_k"] == 20  # query.top_k (at least 10)
    saved = (run_dir / "comparison.json").read_bytes()
    monkeypatch.chdir(tmp_path)
    again = invoke(["eval", "--from-results", "run", "-C", str(project), "--config", str(cfg)])
    assert again.exit_code == 0, again.output
    assert "warning" not in again.stderr
    assert (run_dir / "comparison.json").read_bytes() == saved
    # the references changed since: re-scored with a warning (the river is now the Loire)
    copy.write_text(copy.read_text().replace('"Seine"', '"Loire"'), "utf-8")
    edited = invoke(["eval", "--from-results", "run", "-C", str(project), "--config", str(cfg),
                     "--json"])  # fmt: skip
    assert edited.exit_code == 0, edited.output
    assert "SHA-256 differs" in " ".join(edited.stderr.split())
    metrics = json.loads(edited.stdout)["arms"][0]["metrics"]
    assert metrics["answer_in_context"]["mean"] == 0.5  # "Loire" is in no passage
    copy.unlink()
    gone = invoke(["eval", "--from-results", "run", "-C", str(project), "--config", str(cfg)])
    assert gone.exit_code == 2
    assert "ukr eval DATASET --from-results run" in " ".join(gone.stderr.split())


def test_options_of_a_new_run_are_refused_with_from_results(
    setup: tuple[Path, Path], retrieval_run: Path
) -> None:
    _, project = setup
    result = invoke(["eval", "--from-results", str(retrieval_run), "-C", str(project),
                     "--baseline", "ppr", "--repeats", "2"])  # fmt: skip
    assert result.exit_code == 2
    assert "re-scores the saved run as it ran; drop --baseline, --repeats" in " ".join(
        result.stderr.split())  # fmt: skip


def test_the_closed_book_arm_with_retrieval_only_exits_2(
    setup: tuple[Path, Path], tmp_path: Path, answerer: FakeOpenAIServer
) -> None:
    dataset, project = setup
    cfg = tmp_path / "ukr.yaml"
    cfg.write_text(yaml.safe_dump({"llm": llm(answerer)}), "utf-8")
    out = tmp_path / "run"
    result = invoke(["eval", str(dataset), "-C", str(project), "--out", str(out),
                     "--config", str(cfg), "--retrieval-only", "--closed-book"])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "the closed-book arm only answers; drop --retrieval-only" in result.stderr
    assert not out.exists() and answerer.requests == []


def test_the_metrics_a_gate_may_name_follow_the_run() -> None:
    from unified_kg_rag.evaluation.scoring import KNOWN_METRICS, arm_metrics

    book = arm_metrics("closed_book", baseline="naive", retrieval_only=False,
                       judges=["pairwise", "correctness"])  # fmt: skip
    assert "recall@5" not in book and "cost/retrieval_ms" not in book
    assert "pairwise/directness" not in book and {"em", "judge/correctness"} <= set(book)
    ppr = arm_metrics("ppr", baseline="naive", retrieval_only=False, judges=["pairwise"])
    assert "pairwise/directness" in ppr and "judge/correctness" not in ppr
    assert "pairwise/directness" not in arm_metrics("naive", baseline="naive",
                                                    retrieval_only=False, judges=["pairwise"])
    retrieval = arm_metrics("naive", baseline="naive", retrieval_only=True, judges=[])
    assert set(KNOWN_METRICS) - set(retrieval) == {
        "em", "f1", "answer_contains", "abstained", "abstention/recall", "message_cited_recall",
        "cited_documents", "cited_share", "judge/correctness", "assertion/recall",
        "assertion/contradiction_rate", "assertion/negative_violation_rate",
        "pairwise/comprehensiveness", "pairwise/diversity", "pairwise/empowerment",
        "pairwise/directness", "abstention/precision", "abstention/f1", "abstention/coverage",
        "abstention/accuracy", "abstention/selective_accuracy",
        "abstention/overall_accuracy"}  # fmt: skip
