"""The paired comparison on hand-built rows: scoring, failures, repeats, deltas, gates."""

from __future__ import annotations

import pytest

from unified_kg_rag.config.evaluation import ModelPrice
from unified_kg_rag.domain.models import TokenUsage
from unified_kg_rag.evaluation.comparison import StatsSettings, build_comparison, per_query_scores
from unified_kg_rag.evaluation.dataset import EvalItem
from unified_kg_rag.evaluation.gates import parse_gate
from unified_kg_rag.evaluation.results import JudgementRow, ResultRow, RunManifest, SourceRecord
from unified_kg_rag.evaluation.scoring import ScoringSettings, lower_is_better, score_row

STATS = StatsSettings(resamples=2000, confidence=0.95, seed=3)


def unit(n: int, doc: str, text: str = "", cited: bool = False) -> SourceRecord:
    return SourceRecord(n=n, kind="text_unit", id=f"u{n}", document_id=doc, path=f"{doc}.md",
                        text=text or f"text of {doc}", cited=cited)  # fmt: skip


def row(q: str, arm: str, docs: list[str], answer: str | None = "x", *, repeat: int = 0,
        ok: bool = True, calls: int = 0) -> ResultRow:  # fmt: skip
    return ResultRow(question_id=q, arm=arm, repeat=repeat, ok=ok, answer=answer if ok else None,
                     sources=[unit(i + 1, d) for i, d in enumerate(docs)] if ok else [],
                     usage=TokenUsage(calls=calls, input_tokens=100 * calls,
                                      output_tokens=10 * calls),
                     error=None if ok else "ModelError: boom")  # fmt: skip


def manifest(arms: list[str]) -> RunManifest:
    return RunManifest(run_id="r", created="2026-12-02T00:00:00+00:00", dataset="d.jsonl",
                       arms=arms, baseline=arms[0])  # fmt: skip


ITEMS = [
    EvalItem(id="q1", question="?", answers=["Paris"], supporting=["a", "b"], category="2-hop"),
    EvalItem(id="q2", question="?", answers=["Seine"], supporting=["c"], category="1-hop"),
]


def test_score_row_recall_mrr_ndcg_and_answer_metrics() -> None:
    r = row("q1", "naive", ["z", "a", "y", "b"], answer="Paris [1]\nIt is the capital.")
    s = score_row(ITEMS[0], r, ScoringSettings())
    assert s["recall@2"] == 0.5 and s["recall@5"] == 1.0 and s["mrr"] == 0.5
    # DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3)
    assert s["ndcg@10"] == pytest.approx((1 / 1.5849625 + 1 / 2.3219281) / (1 + 1 / 1.5849625),
                                         rel=1e-6)  # fmt: skip
    assert s["em"] == 1.0 and s["f1"] == 1.0 and s["answer_contains"] == 1.0
    assert s["abstained"] == 0.0 and s["cost/calls"] == 0.0


def test_evidence_snippets_rank_text_units_not_documents() -> None:
    item = EvalItem(id="n", question="?", supporting=["novel"],
                    evidence=["Scrooge was  a squeezing hand", "Marley was dead"])  # fmt: skip
    units = [SourceRecord(n=1, kind="text_unit", id="u1", document_id="novel", text="nothing"),
             SourceRecord(n=2, kind="text_unit", id="u2", document_id="novel",
                          text="Oh! But he, Scrooge was a squeezing hand at the grindstone.")]
    s = score_row(item, ResultRow(question_id="n", arm="naive", sources=units), ScoringSettings())
    assert s["recall@2"] == 0.5 and s["recall@5"] == 0.5 and s["mrr"] == 0.5
    assert "graph_recall" not in s  # document recall means nothing inside one novel


def test_graph_recall_counts_documents_reached_through_cited_entities() -> None:
    entity = SourceRecord(n=2, kind="entity", id="e", document_ids=["b"], cited=True)
    uncited = SourceRecord(n=3, kind="entity", id="f", document_ids=["zz"])
    r = ResultRow(question_id="q1", arm="local", answer="Paris",
                  sources=[unit(1, "a"), entity, uncited])  # fmt: skip
    s = score_row(ITEMS[0], r, ScoringSettings())
    assert s["recall@10"] == 0.5 and s["graph_recall"] == 1.0


def test_abstention_scores_zero_on_answerable_and_recall_on_unanswerable() -> None:
    declined = ResultRow(question_id="q1", arm="naive", answer="Paris?", abstained=True)
    s = score_row(ITEMS[0], declined, ScoringSettings())
    assert s["em"] == 0.0 and s["answer_contains"] == 0.0 and s["abstained"] == 1.0
    unanswerable = EvalItem(id="u", question="?", answerable=False)
    s = score_row(unanswerable, declined.model_copy(update={"question_id": "u"}),
                  ScoringSettings())  # fmt: skip
    assert s["abstention/recall"] == 1.0 and "em" not in s


def test_money_from_user_prices() -> None:
    r = row("q2", "naive", ["c"], calls=2)
    s = score_row(ITEMS[1], r, ScoringSettings(prices={"m": ModelPrice(input_per_1m=3.0,
                                                                       output_per_1m=15.0)},
                                               answer_model="m"))  # fmt: skip
    assert s["cost/money"] == pytest.approx((200 * 3.0 + 20 * 15.0) / 1e6)
    assert lower_is_better("cost/money") and not lower_is_better("recall@5")


def test_failed_answer_scores_zero_where_others_scored_and_keeps_its_cost() -> None:
    rows = [row("q1", "naive", ["a", "b"]), row("q2", "naive", ["c"]),
            row("q1", "ppr", ["a", "b"]), row("q2", "ppr", [], ok=False, calls=3)]
    per = per_query_scores({i.id: i for i in ITEMS}, rows, [], ScoringSettings())
    assert per[("ppr", "q2")]["recall@5"] == 0.0 and per[("ppr", "q2")]["em"] == 0.0
    assert per[("ppr", "q2")]["cost/calls"] == 3.0  # failing is not cheaper
    comp = build_comparison(manifest(["naive", "ppr"]), ITEMS, rows, [],
                            scoring=ScoringSettings(), stats=STATS)  # fmt: skip
    ppr = next(a for a in comp.arms if a.arm == "ppr")
    assert ppr.failed == 1 and ppr.metrics["recall@5"].mean == 0.5
    assert ppr.errors == ["ModelError: boom"]


def test_repeats_are_averaged_per_query_before_the_bootstrap() -> None:
    rows = [row("q1", "naive", ["x", "y"]), row("q2", "naive", ["x"]),
            row("q1", "ppr", ["a", "b"], repeat=0), row("q1", "ppr", ["x"], repeat=1),
            row("q2", "ppr", ["c"], repeat=0), row("q2", "ppr", ["c"], repeat=1)]
    comp = build_comparison(manifest(["naive", "ppr"]), ITEMS, rows, [],
                            scoring=ScoringSettings(), stats=STATS)  # fmt: skip
    d = next(d for d in comp.deltas if d.metric == "recall@5" and d.category is None)
    # q1: ppr (1 + 0) / 2 = 0.5 vs 0; q2: 1 vs 0 -> mean difference 0.75 over n = 2 queries
    assert d.estimate == pytest.approx(0.75) and d.n == 2
    assert 0.5 <= d.low <= d.high <= 1.0
    cats = {(c.category, c.metric): c for c in comp.by_category}
    assert cats[("1-hop", "recall@5")].estimate == 1.0 and cats[("2-hop", "recall@5")].n == 1
    assert comp.categories == {"1-hop": 1, "2-hop": 1}
    assert comp.category_means["2-hop"]["ppr"]["recall@5"] == 0.5


def test_gates_read_the_means_and_delta_intervals() -> None:
    rows = [row("q1", "naive", ["a"]), row("q2", "naive", ["x"]),
            row("q1", "ppr", ["a", "b"]), row("q2", "ppr", ["c"])]
    gates = [parse_gate("ppr.recall@5 < naive.recall@5 + 0.03"),
             parse_gate("ppr.recall@5 < 0.9"),
             parse_gate("delta(ppr,naive).recall@5.low < -0.5")]
    comp = build_comparison(manifest(["naive", "ppr"]), ITEMS, rows, [],
                            scoring=ScoringSettings(), stats=STATS, gates=gates)  # fmt: skip
    assert [g.violated for g in comp.gates] == [False, False, False]
    assert comp.gates[0].left == 1.0 and comp.gates[0].right == pytest.approx(0.25 + 0.03)
    worse = [parse_gate("naive.recall@5 < ppr.recall@5")]
    comp = build_comparison(manifest(["naive", "ppr"]), ITEMS, rows, [],
                            scoring=ScoringSettings(), stats=STATS, gates=worse)  # fmt: skip
    assert comp.gates[0].violated


def test_judge_scores_join_their_rows_and_failures_are_counted() -> None:
    rows = [row("q1", "naive", ["a"]), row("q2", "naive", ["c"])]
    judged = [
        JudgementRow(judge="correctness", question_id="q1", arm="naive",
                     scores={"judge/correctness": 0.5}),
        JudgementRow(judge="correctness", question_id="q2", arm="naive",
                     scores={"judge/correctness": None}, error="deadline"),
    ]  # fmt: skip
    comp = build_comparison(manifest(["naive"]), ITEMS, rows, judged,
                            scoring=ScoringSettings(), stats=STATS)  # fmt: skip
    m = comp.arms[0].metrics["judge/correctness"]
    assert m.mean == 0.5 and m.n == 1  # the failed verdict is not a 0 ...
    assert comp.judge_failures == {"correctness": 1}  # ... it is counted


def test_a_price_is_found_by_full_id_provider_id_or_bare_name() -> None:
    from unified_kg_rag.evaluation.scoring import price_for

    price = ModelPrice(input_per_1m=1.0, output_per_1m=2.0)
    full = "openai:gpt-4o-mini@https://api.openai.com/v1"
    assert price_for({full: price}, full) is price
    assert price_for({"openai:gpt-4o-mini": price}, full) is price
    assert price_for({"gpt-4o-mini": price}, full) is price
    assert price_for({"gpt-4o": price}, full) is None and price_for({"x": price}, None) is None


def test_gates_read_an_arms_abstention_statistics() -> None:
    items = [EvalItem(id="a", question="?", answers=["Paris"], supporting=["a"]),
             EvalItem(id="u", question="?", answerable=False)]
    rows = [ResultRow(question_id="a", arm="naive", answer="Paris"),
            ResultRow(question_id="u", arm="naive", answer="no idea", abstained=True)]
    gates = [parse_gate("naive.abstention/precision < 1"),
             parse_gate("naive.abstention/coverage < 1"),
             parse_gate("naive.abstention/recall < 1")]
    comp = build_comparison(manifest(["naive"]), items, rows, [], scoring=ScoringSettings(),
                            stats=STATS, gates=gates)  # fmt: skip
    # one decline, on the unanswerable item: precision 1; the answerable one answered
    assert comp.arms[0].abstention is not None
    assert comp.arms[0].abstention["precision"] == 1.0
    assert comp.means()["naive"]["abstention/coverage"] == 1.0
    assert [g.violated for g in comp.gates] == [False, False, False]
