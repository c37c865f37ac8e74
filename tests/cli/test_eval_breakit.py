"""Inputs a demanding user throws at ``ukr eval``: odd datasets, strategy lists, run folders,
gates and saved files. Each test pins one defect found by trying to break the framework."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from unified_kg_rag.cli.app import app
from unified_kg_rag.evaluation.dataset import load_dataset
from unified_kg_rag.util.errors import UsageError


def _write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- datasets


def test_a_duplicate_id_is_refused_with_both_lines(tmp_path: Path) -> None:
    # rows are keyed by question id: the second question's answers would overwrite the first's
    path = _write(tmp_path / "d.jsonl", '{"id": "a", "question": "One?"}', "",
                  '{"id": "a", "question": "Two?"}')  # fmt: skip
    with pytest.raises(UsageError) as exc:
        load_dataset(path)
    assert str(exc.value) == f"{path}:3: id: 'a' is also the id of line 1; ids must be unique"


def test_a_default_id_that_collides_with_a_given_one_is_refused(tmp_path: Path) -> None:
    # line 1 has no id, so it is "1"; line 2 names id 1 (a number, read as "1")
    path = _write(tmp_path / "d.jsonl", '{"question": "One?"}', '{"id": 1, "question": "Two?"}')
    with pytest.raises(UsageError, match=r"d\.jsonl:2: id: '1' is also the id of line 1"):
        load_dataset(path)


def test_a_line_that_is_not_an_object_says_so(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", '["question", "One?"]')
    with pytest.raises(UsageError) as exc:
        load_dataset(path)
    assert str(exc.value) == f"{path}:1: not a JSON object (a list); expected {{\"question\": ...}}"


# ------------------------------------------------------------------------ saved runs


def _saved_run(
    tmp_path: Path, rows: list[dict[str, object]], *, repeats: int = 1,
    answer_model: str | None = None, arms: tuple[str, ...] = ("naive", "ppr"),
    retrieval_only: bool = False,
) -> Path:
    """A run folder of arms naive and ppr over q1 and q2 (``answers: ["yes"]``), by hand."""
    dataset = _write(tmp_path / "qa.jsonl", '{"id": "q1", "question": "One?", "answers": ["yes"]}',
                     '{"id": "q2", "question": "Two?", "answers": ["yes"]}')  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    manifest = {"run_id": "run", "created": "2026-12-02T07:00:00+00:00",
                "dataset": str(dataset), "questions": ["q1", "q2"], "arms": list(arms),
                "baseline": "naive", "repeats": repeats, "retrieval_only": retrieval_only,
                "answer_model": answer_model}  # fmt: skip
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    _write(run / "results.jsonl", *(json.dumps(r) for r in rows))
    return run


def _invoke(args: list[str]) -> Result:
    env: dict[str, str | None] = {k: None for k in os.environ if k.upper().startswith("UKR_")}
    return CliRunner().invoke(app, args, env=env)


def test_rescoring_an_interrupted_run_says_which_answers_are_missing(tmp_path: Path) -> None:
    # killed while ppr answered: every question has a row (naive's), so nothing warned, and
    # the table set naive's mean over 2 questions beside ppr's over 1 (and repeat 1 of q2)
    rows: list[dict[str, object]] = [
        {"question_id": q, "arm": "naive", "repeat": r, "answer": "yes"}
        for r in (0, 1) for q in ("q1", "q2")
    ]  # fmt: skip
    rows += [{"question_id": "q1", "arm": "ppr", "repeat": 0, "answer": "no"}]
    run = _saved_run(tmp_path, rows, repeats=2)
    (tmp_path / "p").mkdir()
    result = _invoke(["eval", "--from-results", str(run), "-C", str(tmp_path / "p"), "--json"])
    assert result.exit_code == 0, result.output
    comp = json.loads(result.stdout)
    assert comp["warnings"] == [
        "ppr: 3 of 4 answers are not saved (an interrupted run: run the same command with the "
        "same --out to finish it)"
    ]
    saved = json.loads((run / "comparison.json").read_text("utf-8"))
    assert saved["warnings"] == comp["warnings"]


def test_a_run_whose_answers_all_failed_says_why_not_that_recall_lacks_supporting(
    tmp_path: Path,
) -> None:
    # the answer model answered HTTP 500: the table said "failed answers 2" and then blamed
    # the dataset ("no question ... names its `supporting` passages"), which names them
    error = "ModelError: http://127.0.0.1:1/v1 answered HTTP 500: scripted error"
    rows: list[dict[str, object]] = [
        {"question_id": q, "arm": a, "ok": False, "error": error}
        for a in ("naive", "ppr") for q in ("q1", "q2")
    ]  # fmt: skip
    run = _saved_run(tmp_path, rows)
    (tmp_path / "p").mkdir()
    result = _invoke(["eval", "--from-results", str(run), "-C", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "no question of the dataset" not in out
    assert f"naive: 2 of 2 answers failed, e.g. {error}" in out
    assert f"ppr: 2 of 2 answers failed, e.g. {error}" in out


@pytest.mark.parametrize("prices", [None, {"other-model": {"input_per_1m": 1, "output_per_1m": 1}}])
def test_a_money_gate_without_a_price_for_the_answer_model_exits_2_up_front(
    tmp_path: Path, prices: dict[str, object] | None
) -> None:
    # cost/money has no value without a price: the gate failed closed (exit 4) after the run
    rows: list[dict[str, object]] = [
        {"question_id": q, "arm": a, "answer": "yes",
         "usage": {"calls": 1, "input_tokens": 1000, "output_tokens": 10}}
        for a in ("naive", "ppr") for q in ("q1", "q2")
    ]  # fmt: skip
    run = _saved_run(tmp_path, rows, answer_model="openai:m@http://127.0.0.1:1/v1")
    project = tmp_path / "p"
    project.mkdir()
    if prices is not None:
        (project / "ukr.yaml").write_text(json.dumps({"evaluation": {"prices": prices}}), "utf-8")
    result = _invoke(["eval", "--from-results", str(run), "-C", str(project), "--json",
                      "--fail-if", "ppr.cost/money > 0.01"])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert ('--fail-if: "ppr.cost/money > 0.01" reads cost/money, but evaluation.prices has no '
            "price for the answer model openai:m@http://127.0.0.1:1/v1") in result.stderr


def test_a_money_gate_reads_the_price_of_the_answer_model(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = [
        {"question_id": q, "arm": a, "answer": "yes",
         "usage": {"calls": 1, "input_tokens": 1000, "output_tokens": 10}}
        for a in ("naive", "ppr") for q in ("q1", "q2")
    ]  # fmt: skip
    run = _saved_run(tmp_path, rows, answer_model="openai:m@http://127.0.0.1:1/v1")
    project = tmp_path / "p"
    project.mkdir()
    prices = {"m": {"input_per_1m": 10, "output_per_1m": 100}}
    (project / "ukr.yaml").write_text(json.dumps({"evaluation": {"prices": prices}}), "utf-8")
    result = _invoke(["eval", "--from-results", str(run), "-C", str(project), "--json",
                      "--fail-if", "ppr.cost/money > 0.01"])  # fmt: skip
    # 1000 tokens in at 10 per million + 10 out at 100 per million = 0.011 per answer
    assert result.exit_code == 4, result.output
    assert json.loads(result.stdout)["gates"][0]["reason"] == "0.011 > 0.01"


def test_failed_judge_verdicts_are_reported_in_the_printed_comparison(tmp_path: Path) -> None:
    # a judge whose every call failed left no judge row in the table and no line at all:
    # the count was in --json's judge_failures only
    rows: list[dict[str, object]] = [
        {"question_id": q, "arm": a, "answer": "yes"} for a in ("naive", "ppr") for q in ("q1", "q2")
    ]  # fmt: skip
    run = _saved_run(tmp_path, rows)
    _write(run / "judgements.jsonl", *(json.dumps(
        {"judge": "correctness", "question_id": q, "arm": a, "error": "deadline",
         "scores": {"judge/correctness": None}}) for a in ("naive", "ppr") for q in ("q1", "q2")))
    (tmp_path / "p").mkdir()
    result = _invoke(["eval", "--from-results", str(run), "-C", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert f"judge correctness: 4 verdicts failed (reasons in {run / 'judgements.jsonl'})" in out


@pytest.mark.parametrize(("judge", "arms", "retrieval_only", "message"), [
    ("correctness", ("naive", "ppr"), True,
     "--judge: judges read answers and the run is retrieval-only"),
    ("pairwise", ("naive",), False,
     "--judge: pairwise compares an arm with the baseline (naive): the run has no other arm"),
])  # fmt: skip
def test_re_judging_a_run_the_judge_cannot_read_exits_2_and_keeps_the_manifest(
    tmp_path: Path, judge: str, arms: tuple[str, ...], retrieval_only: bool, message: str
) -> None:
    # it exited 0 having judged nothing, and recorded the judge in the manifest
    rows: list[dict[str, object]] = [
        {"question_id": q, "arm": a} if retrieval_only else
        {"question_id": q, "arm": a, "answer": "yes"} for a in arms for q in ("q1", "q2")
    ]  # fmt: skip
    run = _saved_run(tmp_path, rows, arms=arms, retrieval_only=retrieval_only)
    before = (run / "manifest.json").read_bytes()
    (tmp_path / "p").mkdir()
    result = _invoke(["eval", "--from-results", str(run), "-C", str(tmp_path / "p"),
                      "--judge", judge, "--json"])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert message in " ".join(result.stderr.split())
    assert (run / "manifest.json").read_bytes() == before
    assert not (run / "judgements.jsonl").exists()


def test_an_unknown_search_mode_exits_2_before_any_answer(tmp_path: Path) -> None:
    # every answer failed with "query.search_mode: Input should be ..." and the run exited 0
    dataset = _write(tmp_path / "qa.jsonl", '{"id": "q1", "question": "One?"}')
    (tmp_path / "p").mkdir()
    result = _invoke(["eval", str(dataset), "-C", str(tmp_path / "p"), "--mode", "semantic",
                      "--out", str(tmp_path / "run"), "--json"])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert "--mode: unknown search mode 'semantic'; modes: hybrid, vector, lexical" in " ".join(
        result.stderr.split())
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("strategies", "message"), [
    ("", "--strategies: names no strategy"),
    (" , ", "--strategies: names no strategy"),
    ("naive,closed_book", "--strategies: closed_book is not a strategy; add that arm with "
                          "--closed-book"),
])  # fmt: skip
def test_odd_strategy_lists_exit_2(tmp_path: Path, strategies: str, message: str) -> None:
    # an empty list (a CI variable left unset) silently ran query.strategy instead
    dataset = _write(tmp_path / "qa.jsonl", '{"id": "q1", "question": "One?"}')
    (tmp_path / "p").mkdir()
    result = _invoke(["eval", str(dataset), "-C", str(tmp_path / "p"), "-s", strategies,
                      "--out", str(tmp_path / "run"), "--json"])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert message in " ".join(result.stderr.split())


def test_a_manifest_that_is_not_json_says_so_plainly(tmp_path: Path) -> None:
    from unified_kg_rag.evaluation.results import read_manifest

    (tmp_path / "manifest.json").write_text('{"run_id": 5', encoding="utf-8")
    with pytest.raises(UsageError) as exc:
        read_manifest(tmp_path)
    assert str(exc.value).startswith(f"{tmp_path / 'manifest.json'}: not a run manifest (Invalid "
                                     "JSON: ")  # fmt: skip


def test_prepare_jsonl_refuses_a_repeated_id(tmp_path: Path) -> None:
    # it wrote a dataset that `ukr eval` then refused (or, before that, merged)
    source = _write(tmp_path / "mine.jsonl", '{"id": "a", "question": "One?"}',
                    '{"id": "a", "question": "Two?"}')  # fmt: skip
    result = _invoke(["eval", "prepare", "jsonl", str(source), "--out", str(tmp_path / "d.jsonl"),
                      "--json"])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert f"{source}:2: id: 'a' is also the id of line 1; ids must be unique" in " ".join(
        result.stderr.split())
    assert not (tmp_path / "d.jsonl").exists()
