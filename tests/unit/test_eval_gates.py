"""``--fail-if`` gates: parsing, name checks before a run, evaluation that fails closed."""

from __future__ import annotations

import pytest

from unified_kg_rag.evaluation.gates import (
    DeltaRef,
    Gate,
    GateResult,
    MetricRef,
    Side,
    check_gates,
    evaluate_gates,
    parse_gate,
)
from unified_kg_rag.evaluation.statistics import Interval
from unified_kg_rag.util.errors import UsageError

pytestmark = pytest.mark.unit


def test_parse_the_documented_example() -> None:
    gate = parse_gate("ppr.recall@5 < naive.recall@5 + 0.03")
    assert gate == Gate(
        expression="ppr.recall@5 < naive.recall@5 + 0.03",
        left=Side(((1, MetricRef("ppr", "recall@5")),)),
        op="<",
        right=Side(((1, MetricRef("naive", "recall@5")), (1, 0.03))),
    )
    assert gate.references() == {("ppr", "recall@5"), ("naive", "recall@5")}


def test_parse_metric_names_numbers_and_operators() -> None:
    gate = parse_gate("  mix.judge/correctness - -0.02>=local.cost/input_tokens - 1e3 + .5 ")
    assert gate.op == ">="
    assert gate.left == Side(((1, MetricRef("mix", "judge/correctness")), (-1, -0.02)))
    assert gate.right == Side(
        ((1, MetricRef("local", "cost/input_tokens")), (-1, 1000.0), (1, 0.5))
    )
    assert parse_gate("-0.02 > a_1.ndcg@10").left == Side(((1, -0.02),))
    assert parse_gate("x.abstention/precision<=0.9").op == "<="
    assert parse_gate("x.f1 > 0").op == ">"
    # a metric name may hold dots: the arm ends at the first one
    assert parse_gate("x.a.b < 1").references() == {("x", "a.b")}


@pytest.mark.parametrize(
    "expression",
    [
        "ppr.recall@5 < naive.recall@5 + 0.03",
        "a.f1 - b.f1 >= -0.02",
        "0.5 <= a.judge/correctness - 1 + b.cost/input_tokens",
        "a.x > 1e-05",
        "delta(ppr,naive).recall@5.high < 0",
        "delta( ppr , naive ).f1.estimate - 0.1 <= delta(a,b).f1.low",
    ],
)
def test_round_trip(expression: str) -> None:
    gate = parse_gate(expression)
    again = parse_gate(str(gate))
    assert (again.left, again.op, again.right) == (gate.left, gate.op, gate.right)
    assert str(again) == str(gate)


def test_canonical_form() -> None:
    assert str(parse_gate("a.x<b.y   +   3")) == "a.x < b.y + 3.0"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "empty gate"),
        ("   ", "empty gate"),
        ("ppr.recall@5 naive", 'expected an operator (<, <=, >, >=) in "ppr.recall@5 naive"'),
        ("a.x == b.x", 'unsupported operator "==" in "a.x == b.x"; use <, <=, > or >='),
        ("a.x = b.x", 'unsupported operator "="'),
        ("a.x != b.x", 'unsupported operator "!="'),
        ("a.x => b.x", 'unsupported operator "=>"'),
        ("a.x < b.x < c.x", "more than one comparison"),
        ("< b.x", 'nothing before "<"'),
        ("a.x >=", 'nothing after ">="'),
        ("a.x < b.x +", '"+" needs a term after it'),
        ("a.x < b.x + 0.1 -", '"-" needs a term after it'),
        ("+ a.x < b.x", '"+" needs a term before it'),
        ("a.x < b.x + + 1", '"+" needs a term before it'),
        ("a.x < b.x c.y", 'expected + or - between "b.x" and "c.y"'),
        ("a.x < naive.recall@5+0.03", 'cannot read "naive.recall@5+0.03"'),
        ("a.x < recall", 'cannot read "recall"'),
        ("a.x < 1arm.f1", 'cannot read "1arm.f1"'),
        ("a.x < b.$", 'cannot read "b.$"'),
        ("a.x < nan", 'cannot read "nan"'),
        ("a-b.x < 1", 'cannot read "a-b.x"'),
        ("delta(a,b).f1 < 0", 'expected delta(ARM,BASE).METRIC.estimate, .low or .high'),
        ("delta(a).f1.low < 0", 'cannot read "delta(a).f1.low"'),
        ("delta(a,b).f1.mid < 0", 'cannot read "delta(a,b).f1.mid"'),
    ],
)
def test_parse_errors(expression: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_gate(expression)
    assert info.value.field == "--fail-if"
    assert str(info.value).startswith("--fail-if: ")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


ARMS = ["naive", "ppr"]
METRICS = {
    "naive": ["recall@5", "f1"],
    "ppr": ["recall@5", "f1", *(f"m{i:02d}" for i in range(12))],
}


def test_check_gates_accepts_known_names() -> None:
    check_gates([parse_gate("ppr.recall@5 < naive.recall@5 + 0.03")], ARMS, METRICS)
    check_gates([], ARMS, METRICS)


def test_check_gates_names_an_unknown_arm() -> None:
    with pytest.raises(UsageError) as info:
        check_gates([parse_gate("ppr.f1 > 0"), parse_gate("pprr.f1 < 0.5")], ARMS, METRICS)
    assert str(info.value) == (
        '--fail-if: unknown arm "pprr" in "pprr.f1 < 0.5" (known: naive, ppr)'
    )


def test_check_gates_names_an_unknown_metric_and_truncates_the_list() -> None:
    with pytest.raises(UsageError) as info:
        check_gates([parse_gate("ppr.recal@5 < 0.5")], ARMS, METRICS)
    assert str(info.value) == (
        '--fail-if: unknown metric "recal@5" of arm "ppr" in "ppr.recal@5 < 0.5" '
        "(known: f1, m00, m01, m02, m03, m04, m05, m06, m07, m08 and 4 more)"
    )
    with pytest.raises(UsageError, match=r"\(known: none\)"):
        check_gates([parse_gate("ppr.f1 < naive.f1")], ARMS, {"ppr": ["f1"]})


MEANS: dict[str, dict[str, float | None]] = {
    "naive": {"recall@5": 0.5, "f1": 0.25, "judge/correctness": None},
    "ppr": {"recall@5": 0.5, "f1": 0.75, "nan": float("nan")},
}


def _one(expression: str) -> GateResult:
    return evaluate_gates([parse_gate(expression)], MEANS)[0]


def test_arithmetic() -> None:
    result = _one("ppr.f1 - naive.f1 + 0.5 - -0.25 > 1")
    assert result.left == 0.75 - 0.25 + 0.5 + 0.25
    assert result.right == 1.0
    assert result.violated
    assert result.reason == "1.25 > 1"
    assert result.expression == "ppr.f1 - naive.f1 + 0.5 - -0.25 > 1"


@pytest.mark.parametrize(
    ("expression", "violated"),
    [
        ("ppr.recall@5 < naive.recall@5", False),  # equal: strict comparison is false
        ("ppr.recall@5 <= naive.recall@5", True),
        ("ppr.recall@5 > naive.recall@5", False),
        ("ppr.recall@5 >= naive.recall@5", True),
        ("ppr.recall@5 < naive.recall@5 + 0.25", True),
        ("ppr.recall@5 > naive.recall@5 - 0.25", True),
        ("ppr.f1 < naive.f1", False),
        ("ppr.f1 > naive.f1", True),
    ],
)
def test_violated_exactly_when_the_condition_holds(expression: str, violated: bool) -> None:
    assert _one(expression).violated is violated


def test_passing_gate_reason() -> None:
    result = _one("ppr.f1 < naive.f1 + 0.03")
    assert not result.violated
    assert (result.left, result.right) == (0.75, pytest.approx(0.28))
    assert result.reason == "0.75 < 0.28 is false"


@pytest.mark.parametrize(
    ("expression", "left", "right", "reason"),
    [
        ("naive.judge/correctness < 0.5", None, 0.5, "no value for naive.judge/correctness"),
        ("ppr.f1 > ppr.nan", 0.75, None, "no value for ppr.nan"),
        ("local.f1 < 1", None, 1.0, "no value for local.f1"),
        ("ppr.cost/calls < naive.cost/calls + ppr.cost/calls", None, None,
         "no value for ppr.cost/calls, naive.cost/calls"),
    ],
)  # fmt: skip
def test_missing_values_fail_closed(
    expression: str, left: float | None, right: float | None, reason: str
) -> None:
    result = _one(expression)
    assert result.violated
    assert (result.left, result.right, result.reason) == (left, right, reason)


def test_results_follow_gate_order_and_serialise() -> None:
    gates = [parse_gate("ppr.f1 > 0.5"), parse_gate("ppr.f1 < 0.5")]
    results = evaluate_gates(gates, MEANS)
    assert [r.violated for r in results] == [True, False]
    assert results[0].model_dump() == {
        "expression": "ppr.f1 > 0.5", "violated": True, "left": 0.75, "right": 0.5,
        "reason": "0.75 > 0.5",
    }  # fmt: skip
    assert evaluate_gates([], MEANS) == []


def test_parse_delta_terms() -> None:
    gate = parse_gate("delta( ppr , naive ).judge/correctness.low < -0.05 + ppr.f1")
    assert gate.left == Side(((1, DeltaRef("ppr", "naive", "judge/correctness", "low")),))
    assert str(gate) == "delta(ppr,naive).judge/correctness.low < -0.05 + ppr.f1"
    assert gate.references() == {
        ("ppr", "judge/correctness"), ("naive", "judge/correctness"), ("ppr", "f1"),
    }  # fmt: skip
    # a metric may hold dots; the last component is the bound
    assert parse_gate("delta(a,b).x.y.high > 0").left == Side(((1, DeltaRef("a", "b", "x.y", "high")),))
    # an arm named "delta" is still an arm
    assert parse_gate("delta.f1 > 0").references() == {("delta", "f1")}


def test_check_gates_checks_both_arms_of_a_delta() -> None:
    check_gates([parse_gate("delta(ppr,naive).f1.high < 0")], ARMS, METRICS)
    with pytest.raises(UsageError, match='unknown arm "local"'):
        check_gates([parse_gate("delta(ppr,local).f1.high < 0")], ARMS, METRICS)
    with pytest.raises(UsageError, match='unknown metric "m00" of arm "naive"'):
        check_gates([parse_gate("delta(ppr,naive).m00.high < 0")], ARMS, METRICS)


DELTAS: dict[tuple[str, str], dict[str, Interval | None]] = {
    ("ppr", "naive"): {"f1": Interval(0.5, -0.25, 0.75, 40), "recall@5": None},
}


@pytest.mark.parametrize(
    ("expression", "violated", "left", "reason"),
    [
        ("delta(ppr,naive).f1.high < 0", False, 0.75, "0.75 < 0 is false"),
        ("delta(ppr,naive).f1.low < 0", True, -0.25, "-0.25 < 0"),
        ("delta(ppr,naive).f1.estimate <= 0.5", True, 0.5, "0.5 <= 0.5"),
        ("delta(ppr,naive).f1.estimate < 0.5", False, 0.5, "0.5 < 0.5 is false"),
        ("delta(ppr,naive).f1.low + ppr.f1 > 0.5", False, 0.5, "0.5 > 0.5 is false"),
        ("delta(ppr,naive).recall@5.low < 0", True, None,
         "no value for delta(ppr,naive).recall@5.low"),
        ("delta(naive,ppr).f1.low < 0", True, None, "no value for delta(naive,ppr).f1.low"),
    ],
)  # fmt: skip
def test_evaluate_delta_terms(
    expression: str, violated: bool, left: float | None, reason: str
) -> None:
    result = evaluate_gates([parse_gate(expression)], MEANS, DELTAS)[0]
    assert (result.violated, result.left, result.reason) == (violated, left, reason)


def test_delta_terms_without_deltas_fail_closed() -> None:
    result = evaluate_gates([parse_gate("delta(ppr,naive).f1.high < 0")], MEANS)[0]
    assert result.violated
    assert result.reason == "no value for delta(ppr,naive).f1.high"
