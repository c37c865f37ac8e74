"""`ukr eval --strategies ...` end to end: a real corpus indexed with `ukr index` (the bundled
embedder), answers from real OpenAI-compatible servers on 127.0.0.1, saved rows, resume,
``--from-results``, failed answers, the closed-book arm and the LLM judges (issue 19)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result
from tests.support.eval_runs import invoke, prepare_and_index
from tests.support.openai_server import FakeOpenAIServer, Scripted

pytestmark = pytest.mark.integration

Q1 = "In which city was the husband of Marie Curie born?"
Q2 = "Which river flows through the city that hosted the 1924 Olympics?"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(dataset.jsonl, project)``: the MuSiQue-shaped set prepared and indexed (no LLM)."""
    return prepare_and_index(tmp_path_factory.mktemp("eval_compare"))


def config(path: Path, **sections: Any) -> Path:
    """Write a configuration file (``--config``) with these sections; return its path."""
    path.write_text(yaml.safe_dump(sections), "utf-8")
    return path


def openai_llm(server: FakeOpenAIServer, model: str = "answerer") -> dict[str, Any]:
    """An ``llm`` (or ``evaluation.judge``) section for ``server``: no retries, no cache."""
    return {"kind": "openai", "max_retries": 0, "cache": False,
            "openai": {"base_url": server.base_url, "api_key": "k", "model": model}}  # fmt: skip


def evaluate(dataset: Path, project: Path, out: Path, *args: str) -> Result:
    return invoke(["eval", str(dataset), "-C", str(project), "--out", str(out), *args])


def rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def arm(comp: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in comp["arms"] if a["arm"] == name)


@pytest.fixture
def answerer() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


# ------------------------------------------------------------------------ a two-arm run


def test_two_strategies_two_repeats_save_every_row_and_compare(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    dataset, project = setup
    out = tmp_path / "run"
    result = evaluate(dataset, project, out, "--strategies", "naive,ppr", "--repeats", "2",
                      "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    comp = json.loads(result.stdout)
    assert comp["run_dir"] == str(out) and comp["baseline"] == "naive"
    saved = rows(out)
    assert len(saved) == 2 * 2 * 2  # questions × arms × repeats
    assert sorted((r["question_id"], r["arm"], r["repeat"]) for r in saved) == sorted(
        (q, a, n) for q in ("q1", "q2") for a in ("naive", "ppr") for n in (0, 1))
    assert all(r["ok"] for r in saved)
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["arms"], manifest["baseline"], manifest["repeats"]) == (
        ["naive", "ppr"], "naive", 2)  # fmt: skip
    assert manifest["questions"] == ["q1", "q2"]
    assert len(manifest["config_hash"]) == 64
    assert manifest["dataset_sha256"] == hashlib.sha256(dataset.read_bytes()).hexdigest()
    assert manifest["versions"]["python"] and "numpy" in manifest["versions"]
    assert manifest["judge_is_answer_model"] is False and manifest["judges"] == []
    assert manifest["finished"] is not None
    assert manifest["index_record"]["counts"]["text_units"] == 5
    # five passages: every supporting passage is within the first 5 for both arms
    for name in ("naive", "ppr"):
        a = arm(comp, name)
        assert (a["questions"], a["rows"], a["failed"]) == (2, 4, 0)
        assert a["metrics"]["recall@5"]["mean"] == 1.0
        assert a["metrics"]["recall@10"]["mean"] == 1.0
        assert a["metrics"]["answer_in_context"]["mean"] == 1.0
    deltas = {d["metric"]: d for d in comp["deltas"]}
    assert {d["arm"] for d in comp["deltas"]} == {"ppr"}
    assert {d["baseline"] for d in comp["deltas"]} == {"naive"}
    assert deltas["recall@5"]["n"] == 2 and deltas["recall@5"]["estimate"] == 0.0
    assert deltas["recall@10"]["n"] == 2 and "mrr" in deltas
    assert json.loads((out / "comparison.json").read_text()) == {
        k: v for k, v in comp.items() if k != "run_dir"}  # fmt: skip


# ------------------------------------------------------- failed answers and --from-results


def test_a_failed_answer_is_saved_and_scored_0_and_from_results_reproduces_it(
    setup: tuple[Path, Path], tmp_path: Path, answerer: FakeOpenAIServer
) -> None:
    dataset, project = setup
    cfg = config(tmp_path / "ukr.yaml", llm=openai_llm(answerer),
                 query={"llm_router": False})  # fmt: skip
    # rows run repeat by repeat, arm by arm: naive answers q1 first, and that call fails
    answerer.script(Scripted(status=400, message="bad prompt", match=Q1, times=1))
    out = tmp_path / "run"
    result = evaluate(dataset, project, out, "--strategies", "naive,ppr", "--config", str(cfg),
                      "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    comp = json.loads(result.stdout)
    saved = {(r["question_id"], r["arm"]): r for r in rows(out)}
    assert len(saved) == 4
    failed = saved[("q1", "naive")]
    assert failed["ok"] is False and failed["answer"] is None
    assert "bad prompt" in failed["error"]
    assert failed["latency_ms"] > 0
    assert failed["usage"]["calls"] == 1 and failed["usage"]["input_tokens"] > 0
    assert all(r["ok"] for k, r in saved.items() if k != ("q1", "naive"))
    naive, ppr = arm(comp, "naive"), arm(comp, "ppr")
    assert (naive["rows"], naive["failed"], naive["questions"]) == (2, 1, 2)
    assert any("bad prompt" in e for e in naive["errors"])
    # q1 scores 0 for naive (never dropped), q2 scores 1: the mean is 0.5 over n = 2
    for metric in ("recall@5", "recall@10", "answer_in_context", "answer_contains"):
        assert naive["metrics"][metric]["mean"] == 0.5, metric
        assert naive["metrics"][metric]["n"] == 2
        assert ppr["metrics"][metric]["mean"] == 1.0, metric
    # its cost is kept: the failed row's latency is in the arm's cost, over both rows
    assert (naive["cost"]["rows"], naive["cost"]["calls"]) == (2, 2)
    assert naive["metrics"]["cost/calls"]["mean"] == 1.0
    assert naive["metrics"]["cost/latency_ms"]["n"] == 2
    deltas = {d["metric"]: d for d in comp["deltas"]}
    assert deltas["recall@5"]["n"] == 2 and deltas["recall@5"]["estimate"] == 0.5
    calls = len(answerer.requests)
    assert calls >= 4
    saved_comparison = (out / "comparison.json").read_bytes()
    saved_rows = (out / "results.jsonl").read_bytes()
    (out / "comparison.json").unlink()
    again = invoke(["eval", "--from-results", str(out), "-C", str(project),
                    "--config", str(cfg), "--json"])  # fmt: skip
    assert again.exit_code == 0, again.output
    assert (out / "comparison.json").read_bytes() == saved_comparison
    assert (out / "results.jsonl").read_bytes() == saved_rows
    assert json.loads(again.stdout) == comp
    assert len(answerer.requests) == calls  # no model call
    # re-judged from the saved answers: the failed one is not judged, and scores 0
    grade = json.dumps({"label": "correct", "reason": "same"})
    with FakeOpenAIServer(reply=lambda body: grade) as judge:
        judged = tmp_path / "judged.yaml"
        config(judged, llm=openai_llm(answerer), query={"llm_router": False},
               evaluation={"judge": openai_llm(judge, model="judge")})  # fmt: skip
        args = ["eval", "--from-results", str(out), "-C", str(project), "--config", str(judged),
                "--judge", "correctness", "--json"]  # fmt: skip
        first, second = invoke(args), invoke(args)
        judge_calls = len(judge.requests)
    assert first.exit_code == 0, first.output
    assert second.exit_code == 0, second.output
    assert len(answerer.requests) == calls
    assert judge_calls == 2 * 3  # three answers, judged again on the second re-score
    verdicts = (out / "judgements.jsonl").read_text().splitlines()
    assert sorted((json.loads(v)["question_id"], json.loads(v)["arm"]) for v in verdicts) == [
        ("q1", "ppr"), ("q2", "naive"), ("q2", "ppr")]  # replaced, not appended twice
    rejudged = json.loads(second.stdout)
    assert rejudged["judge_failures"] == {}
    # naive: q1 failed (0, filled in), q2 judged correct (1)
    assert arm(rejudged, "naive")["metrics"]["judge/correctness"]["mean"] == 0.5
    assert arm(rejudged, "naive")["metrics"]["judge/correctness"]["n"] == 2
    assert arm(rejudged, "ppr")["metrics"]["judge/correctness"]["mean"] == 1.0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["judges"] == ["correctness"] and manifest["judge_is_answer_model"] is False
    # the same command again resumes: the failed answer (an outage) is asked again, the
    # others are not; the new row is appended and counts, and the arm is whole
    before = len(answerer.requests)
    resumed = evaluate(dataset, project, out, "--strategies", "naive,ppr", "--config", str(cfg),
                       "--json")  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    assert len(answerer.requests) == before + 1
    assert len(rows(out)) == 5  # 4 rows, then the retried one
    naive = arm(json.loads(resumed.stdout), "naive")
    assert naive["failed"] == 0 and naive["metrics"]["recall@5"]["mean"] == 1.0


# ------------------------------------------------------------------------------ resume


def test_an_interrupted_run_resumes_with_the_rows_it_lacks(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    dataset, project = setup
    out = tmp_path / "run"
    args = ("--strategies", "naive,ppr", "--repeats", "2", "--json")
    first = evaluate(dataset, project, out, *args)
    assert first.exit_code == 0, first.output
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == 8
    # killed after 5 rows, in the middle of writing the 6th
    kept = "".join(lines[:5])
    (out / "results.jsonl").write_text(kept + lines[5][: len(lines[5]) // 2], "utf-8")
    (out / "comparison.json").unlink()
    second = evaluate(dataset, project, out, *args)
    assert second.exit_code == 0, second.output
    text = (out / "results.jsonl").read_text()
    assert text.startswith(kept)  # the saved rows are kept as they were, not run again
    after = rows(out)
    assert len(after) == 8
    assert sorted((r["question_id"], r["arm"], r["repeat"]) for r in after) == sorted(
        (json.loads(line)["question_id"], json.loads(line)["arm"], json.loads(line)["repeat"])
        for line in lines)  # fmt: skip
    assert [arm(json.loads(second.stdout), a)["rows"] for a in ("naive", "ppr")] == [4, 4]
    # the same command again runs nothing
    third = evaluate(dataset, project, out, *args)
    assert third.exit_code == 0, third.output
    assert (out / "results.jsonl").read_text() == text


def test_another_run_on_the_same_folder_is_refused(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    dataset, project = setup
    out = tmp_path / "run"
    first = evaluate(dataset, project, out, "--strategies", "naive", "--retrieval-only")
    assert first.exit_code == 0, first.output
    before = (out / "results.jsonl").read_bytes()
    other = evaluate(dataset, project, out, "--strategies", "naive,ppr", "--retrieval-only")
    assert other.exit_code == 2
    assert "holds another run" in other.stderr and "arms" in other.stderr
    assert str(out) in other.stderr.replace("\n", "")
    repeats = evaluate(dataset, project, out, "--strategies", "naive", "--retrieval-only",
                       "--repeats", "3")  # fmt: skip
    assert repeats.exit_code == 2 and "repeats" in repeats.stderr
    assert (out / "results.jsonl").read_bytes() == before


# -------------------------------------------------------------------------- closed book


def closed_book_reply(body: dict[str, Any]) -> str:
    """Knows Marie Curie's husband's city without documents; echoes otherwise."""
    text = " ".join(str(m.get("content", "")) for m in body["messages"])
    if "no documents are given to you" in text:
        return "Paris\nHe was born there." if "Marie Curie" in text else "I do not know."
    return f"echo: {body['messages'][-1]['content']}"


def test_the_closed_book_arm_answers_without_retrieval(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    dataset, project = setup
    with FakeOpenAIServer(reply=closed_book_reply) as server:
        cfg = config(tmp_path / "ukr.yaml", llm=openai_llm(server),
                     query={"llm_router": False})  # fmt: skip
        out = tmp_path / "run"
        result = evaluate(dataset, project, out, "--strategies", "naive", "--closed-book",
                          "--config", str(cfg), "--json")  # fmt: skip
        model_id = f"openai:answerer@{server.base_url}"
    assert result.exit_code == 0, result.output
    comp = json.loads(result.stdout)
    book = [r for r in rows(out) if r["arm"] == "closed_book"]
    assert sorted(r["question_id"] for r in book) == ["q1", "q2"]
    assert all(r["ok"] and r["sources"] == [] for r in book)
    assert {r["question_id"]: r["answer"] for r in book} == {
        "q1": "Paris\nHe was born there.", "q2": "I do not know."}  # fmt: skip
    closed = arm(comp, "closed_book")
    assert closed["closed_book"] is True and closed["questions"] == 2
    assert closed["metrics"]["em"]["mean"] == 0.5  # "Paris" on q1; nothing on q2
    assert closed["metrics"]["answer_contains"]["mean"] == 0.5
    assert closed["metrics"]["cost/calls"]["mean"] == 1.0
    for metric in ("recall@5", "recall@10", "mrr", "answer_in_context", "graph_recall",
                   "cost/retrieval_ms"):  # fmt: skip
        assert metric not in closed["metrics"], metric
    assert arm(comp, "naive")["metrics"]["recall@5"]["mean"] == 1.0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["arms"] == ["naive", "closed_book"]
    assert manifest["answer_model"] == model_id


# ------------------------------------------------------------------------------ judges


def judge_reply(body: dict[str, Any]) -> str:
    """A judge: grades q2's answers correct and q1's with prose (malformed); always prefers
    the answer shown first (position bias)."""
    from unified_kg_rag.evaluation.judges import CRITERIA

    text = "\n".join(str(m.get("content", "")) for m in body["messages"])
    if "You grade answers to questions" in text:
        if Q1 in text:
            return "The answer looks right to me."
        return json.dumps({"label": "correct", "reason": "same river"})
    if "You compare two answers" in text:
        return json.dumps({c: {"winner": "1", "reason": "first"} for c in CRITERIA})
    return "?"


def test_judges_on_a_separate_model_score_fail_and_time_out_visibly(
    setup: tuple[Path, Path], tmp_path: Path, answerer: FakeOpenAIServer
) -> None:
    from unified_kg_rag.evaluation.judges import CRITERIA

    dataset, project = setup
    with FakeOpenAIServer(reply=judge_reply) as judge:
        # q2's pair is judged slowly, past evaluation.judge_timeout_s, in both orders
        judge.script(Scripted(match=f"{Q2}\n\nAnswer 1:", delay_s=1.0, times=2))
        cfg = config(tmp_path / "ukr.yaml", llm=openai_llm(answerer),
                     query={"llm_router": False},
                     evaluation={"judge": openai_llm(judge, model="judge"),
                                 "judge_timeout_s": 0.5})  # fmt: skip
        out = tmp_path / "run"
        result = evaluate(dataset, project, out, "--strategies", "naive,ppr", "--judge",
                          "correctness,pairwise", "--config", str(cfg), "--json")  # fmt: skip
        judge_id = f"openai:judge@{judge.base_url}"
        judge_calls = len(judge.requests)
    assert result.exit_code == 0, result.output
    comp = json.loads(result.stdout)
    # correctness: 4 answers; pairwise: 1 candidate arm × 2 questions × 2 orders
    assert judge_calls == 4 + 4
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["judge_model"] == judge_id
    assert manifest["judge_is_answer_model"] is False
    assert manifest["judges"] == ["correctness", "pairwise"]
    assert not any("judge is the answer model" in w for w in comp["warnings"])
    # correctness: q1's verdicts are malformed (counted, not scored), q2's are "correct"
    for name in ("naive", "ppr"):
        score = arm(comp, name)["metrics"]["judge/correctness"]
        assert (score["mean"], score["n"]) == (1.0, 1)
    assert comp["judge_failures"] == {"correctness": 2, "pairwise": 1}
    saved = [json.loads(line) for line in (out / "judgements.jsonl").read_text().splitlines()]
    assert len(saved) == 4 + 2
    bad = [j for j in saved if j["judge"] == "correctness" and j["question_id"] == "q1"]
    assert len(bad) == 2 and all("malformed reply" in j["error"] for j in bad)
    assert all(j["scores"] == {"judge/correctness": None} for j in bad)
    slow = next(j for j in saved if j["judge"] == "pairwise" and j["question_id"] == "q2")
    assert slow["error"] == "first order: deadline; second order: deadline"
    assert slow["scores"] == {f"pairwise/{c}": None for c in CRITERIA}
    # pairwise: only ppr is judged against naive; the biased q1 pair is inconsistent
    assert list(comp["pairwise"]) == ["ppr"]
    for name in CRITERIA:
        row = comp["pairwise"]["ppr"]["criteria"][name]
        assert (row["judged"], row["inconsistent"], row["failed"]) == (1, 1, 1)
        assert row["position_consistency"] == 0.0 and row["win_rate"] is None
    assert "pairwise/comprehensiveness" not in arm(comp, "ppr")["metrics"]


def test_an_interrupted_judging_resumes_with_the_verdicts_it_lacks(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    dataset, project = setup
    grade = json.dumps({"label": "correct", "reason": "same"})
    with FakeOpenAIServer(reply=lambda body: grade) as judge:
        # extractive answers (no llm); the judge is a model of its own
        cfg = config(tmp_path / "ukr.yaml",
                     evaluation={"judge": openai_llm(judge, model="judge")})  # fmt: skip
        out = tmp_path / "run"
        args = ("--strategies", "naive,ppr", "--judge", "correctness", "--config", str(cfg))
        first = evaluate(dataset, project, out, *args)
        assert first.exit_code == 0, first.output
        assert len(judge.requests) == 4
        verdicts = (out / "judgements.jsonl").read_text().splitlines(keepends=True)
        # killed while saving the fourth verdict
        (out / "judgements.jsonl").write_text("".join(verdicts[:3]) + verdicts[3][:40], "utf-8")
        second = evaluate(dataset, project, out, *args, "--json")
        assert second.exit_code == 0, second.output
        assert len(judge.requests) == 5  # only the lost verdict is asked again
    text = (out / "judgements.jsonl").read_text()
    assert text.startswith("".join(verdicts[:3])) and len(text.splitlines()) == 4
    comp = json.loads(second.stdout)
    assert comp["judge_failures"] == {}
    for name in ("naive", "ppr"):
        assert arm(comp, name)["metrics"]["judge/correctness"]["mean"] == 1.0
        assert arm(comp, name)["metrics"]["judge/correctness"]["n"] == 2


def test_a_question_every_arm_fails_is_scored_0_not_dropped(
    setup: tuple[Path, Path], tmp_path: Path, answerer: FakeOpenAIServer
) -> None:
    dataset, project = setup
    cfg = config(tmp_path / "ukr.yaml", llm=openai_llm(answerer),
                 query={"llm_router": False})  # fmt: skip
    answerer.script(Scripted(status=400, message="bad prompt", match=Q1, times=None))
    out = tmp_path / "run"
    result = evaluate(dataset, project, out, "--strategies", "naive,ppr", "--config", str(cfg),
                      "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    comp = json.loads(result.stdout)
    for name in ("naive", "ppr"):
        a = arm(comp, name)
        assert (a["failed"], a["questions"]) == (1, 2)
        for metric in ("recall@5", "answer_in_context", "answer_contains", "em"):
            assert (a["metrics"][metric]["n"], a["metrics"][metric]["mean"]) == (
                2, 0.5 if metric != "em" else 0.0), (name, metric)  # fmt: skip
    deltas = {d["metric"]: d for d in comp["deltas"]}
    assert deltas["recall@5"]["n"] == 2 and deltas["recall@5"]["estimate"] == 0.0
