"""``--fail-if`` gates: conditions over a comparison's means and deltas that fail a CI run.

What belongs here: the gate grammar, its parser, the check of a gate's names against the
arms and metrics a run will produce (before the run, so a typo fails fast), and evaluation
against the per-arm means and paired intervals. No metric or interval computation
(`evaluation.metrics`, `evaluation.statistics`), no I/O.

Grammar (seed 000 §9, "``--fail-if`` gates on either", metrics and cost)::

    GATE   := SIDE OP SIDE            OP := "<" | "<=" | ">" | ">="
    SIDE   := TERM (("+" | "-") TERM)*     "+" and "-" separated from terms by whitespace
    TERM   := NUMBER | ARM "." METRIC | DELTA
    DELTA  := "delta(" ARM "," ARM ")." METRIC "." ("estimate" | "low" | "high")
    ARM    := [A-Za-z_][A-Za-z0-9_]*
    METRIC := [A-Za-z_][A-Za-z0-9_@/.]*    recall@5, f1, judge/correctness, cost/input_tokens

A NUMBER may be negative (``-0.02``); spaces inside ``delta( ... )`` are allowed.
``ppr.recall@5 < naive.recall@5 + 0.03`` fails the run when ppr's mean recall@5 is below
naive's plus 0.03: a gate is *violated* when its condition is true. ``delta(ppr,naive)``
reads the paired comparison of arm ``ppr`` against base ``naive`` (`statistics.Interval`
of the per-query differences ppr - naive): ``delta(ppr,naive).recall@5.high < 0`` fails
when the whole interval lies below zero, a regression the bootstrap is sure of. A gate
whose value is missing (an arm, metric or delta without a value) is violated too: it fails
closed. Comparisons are exact float comparisons.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, cast

from pydantic import BaseModel, ConfigDict

from unified_kg_rag.evaluation.statistics import Interval
from unified_kg_rag.util.errors import UsageError

__all__ = [
    "DeltaRef",
    "Deltas",
    "Gate",
    "GateResult",
    "Means",
    "MetricRef",
    "Side",
    "check_gates",
    "evaluate_gates",
    "parse_gate",
]

Operator: TypeAlias = Literal["<", "<=", ">", ">="]
_OPERATORS: tuple[Operator, ...] = ("<", "<=", ">", ">=")
_FIELD = "--fail-if"
_COMPARISON = re.compile(r"[<>=!]+")
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_ARM = r"[A-Za-z_][A-Za-z0-9_:]*"
_METRIC = r"[A-Za-z_][A-Za-z0-9_@/.]*"
_REF = re.compile(rf"({_ARM})\.({_METRIC})")
_DELTA = re.compile(rf"delta\(({_ARM}),({_ARM})\)\.({_METRIC})\.(estimate|low|high)")
_PARENS = re.compile(r"\(([^()]*)\)")
_EXAMPLE = '"ppr.recall@5 < naive.recall@5 + 0.03"'
_MAX_LISTED = 10


@dataclass(frozen=True)
class MetricRef:
    """A term naming one arm's mean of one metric (``ppr.recall@5``)."""

    arm: str
    metric: str

    def __str__(self) -> str:
        return f"{self.arm}.{self.metric}"


Bound: TypeAlias = Literal["estimate", "low", "high"]


@dataclass(frozen=True)
class DeltaRef:
    """A term naming a bound of a paired difference (``delta(ppr,naive).recall@5.low``).

    Attributes:
        arm: the compared arm.
        base: the arm it is compared against (the difference is arm - base).
        metric: the metric.
        bound: which number of the interval: ``estimate``, ``low`` or ``high``.
    """

    arm: str
    base: str
    metric: str
    bound: Bound

    def __str__(self) -> str:
        return f"delta({self.arm},{self.base}).{self.metric}.{self.bound}"


Term: TypeAlias = float | MetricRef | DeltaRef
Means: TypeAlias = Mapping[str, Mapping[str, float | None]]
"""arm → metric → mean over queries."""
Deltas: TypeAlias = Mapping[tuple[str, str], Mapping[str, Interval | None]]
"""``(arm, base)`` → metric → interval of the per-query differences arm - base."""


def _bound(interval: Interval, bound: Bound) -> float:
    if bound == "low":
        return interval.low
    if bound == "high":
        return interval.high
    return interval.estimate


@dataclass(frozen=True)
class Side:
    """One side of a gate: a signed sum of terms.

    Attributes:
        terms: ``(sign, term)`` pairs, sign +1 or -1; the first sign is +1 (a leading minus
            is a negative number's).
    """

    terms: tuple[tuple[int, Term], ...]

    def __str__(self) -> str:
        parts: list[str] = []
        for i, (sign, term) in enumerate(self.terms):
            if i:
                parts.append("+" if sign > 0 else "-")
            parts.append(repr(term) if isinstance(term, float) else str(term))
        return " ".join(parts)

    def references(self) -> set[tuple[str, str]]:
        """The ``(arm, metric)`` pairs this side reads."""
        refs: set[tuple[str, str]] = set()
        for _, t in self.terms:
            if isinstance(t, MetricRef):
                refs.add((t.arm, t.metric))
            elif isinstance(t, DeltaRef):
                refs |= {(t.arm, t.metric), (t.base, t.metric)}
        return refs

    def value(
        self, means: Means, deltas: Deltas | None = None
    ) -> tuple[float | None, list[str]]:
        """Return the side's value and the names without a value (then the value is None).

        A mean or interval that is missing, None or NaN has no value.
        """
        total = 0.0
        missing: list[str] = []
        for sign, term in self.terms:
            v: float | None
            if isinstance(term, MetricRef):
                v = means.get(term.arm, {}).get(term.metric)
            elif isinstance(term, DeltaRef):
                interval = (deltas or {}).get((term.arm, term.base), {}).get(term.metric)
                v = None if interval is None else _bound(interval, term.bound)
            else:
                v = term
            if v is None or math.isnan(v):
                missing.append(str(term))
            else:
                total += sign * v
        return (None, missing) if missing else (total, [])


@dataclass(frozen=True)
class Gate:
    """A parsed ``--fail-if`` condition; violated (the run fails) when the condition holds.

    Attributes:
        expression: the expression as given.
        left: the left side.
        op: the comparison.
        right: the right side.
    """

    expression: str
    left: Side
    op: Operator
    right: Side

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"

    def references(self) -> set[tuple[str, str]]:
        """The ``(arm, metric)`` pairs the gate reads."""
        return self.left.references() | self.right.references()

    def holds(self, left: float, right: float) -> bool:
        """Whether ``left OP right`` is true (exact float comparison)."""
        if self.op == "<":
            return left < right
        if self.op == "<=":
            return left <= right
        if self.op == ">":
            return left > right
        return left >= right


class GateResult(BaseModel):
    """The outcome of one gate.

    Attributes:
        expression: the gate as given.
        violated: True when the condition holds or a value is missing (the run fails).
        left: the left side's value; None when it lacks a value.
        right: the right side's value; None when it lacks a value.
        reason: ``"0.52 < 0.53"`` (violated), ``"0.6 < 0.53 is false"`` (passed) or
            ``"no value for ppr.recall@5"``.
    """

    model_config = ConfigDict(frozen=True)

    expression: str
    violated: bool
    left: float | None
    right: float | None
    reason: str


def _error(message: str) -> UsageError:
    return UsageError(message, field=_FIELD)


def _parse_term(token: str, expression: str) -> Term:
    if _NUMBER.fullmatch(token):
        return float(token)
    if match := _DELTA.fullmatch(token):
        return DeltaRef(match[1], match[2], match[3], cast(Bound, match[4]))
    if token.startswith("delta("):
        raise _error(
            f'cannot read "{token}" in "{expression}": expected '
            "delta(ARM,BASE).METRIC.estimate, .low or .high"
        )
    if match := _REF.fullmatch(token):
        return MetricRef(match[1], match[2])
    raise _error(
        f'cannot read "{token}" in "{expression}": a term is a number, ARM.METRIC or '
        "delta(ARM,BASE).METRIC.low/high/estimate, with spaces around + and -"
    )


def _parse_side(text: str, where: str, expression: str) -> Side:
    tokens = _PARENS.sub(lambda m: "(" + "".join(m[1].split()) + ")", text).split()
    if not tokens:
        raise _error(f'nothing {where} in "{expression}"; expected e.g. {_EXAMPLE}')
    terms: list[tuple[int, Term]] = []
    sign = 1
    for i, token in enumerate(tokens):
        if i % 2:
            if token not in ("+", "-"):
                raise _error(
                    f'expected + or - between "{tokens[i - 1]}" and "{token}" in "{expression}"'
                )
            sign = 1 if token == "+" else -1
            continue
        if token in ("+", "-"):
            raise _error(f'"{token}" needs a term before it in "{expression}"')
        terms.append((sign, _parse_term(token, expression)))
    if len(tokens) % 2 == 0:
        raise _error(f'"{tokens[-1]}" needs a term after it in "{expression}"')
    return Side(tuple(terms))


def parse_gate(expression: str) -> Gate:
    """Parse one ``--fail-if`` expression (grammar in the module docstring).

    Args:
        expression: e.g. ``"ppr.recall@5 < naive.recall@5 + 0.03"``.

    Returns:
        The gate.

    Raises:
        UsageError: (field ``--fail-if``) the expression is empty, has no comparison or more
            than one, an unsupported one (``=``, ``==``, ``!=``), a token that is neither a
            number nor ARM.METRIC, or a ``+``/``-`` without a term on each side.
    """
    if not expression.strip():
        raise _error(f"empty gate; expected e.g. {_EXAMPLE}")
    found = list(_COMPARISON.finditer(expression))
    if not found:
        raise _error(f'expected an operator (<, <=, >, >=) in "{expression}"')
    if len(found) > 1:
        raise _error(f'more than one comparison in "{expression}"')
    match = found[0]
    op = match[0]
    if op not in _OPERATORS:
        raise _error(f'unsupported operator "{op}" in "{expression}"; use <, <=, > or >=')
    left = _parse_side(expression[: match.start()], f'before "{op}"', expression)
    right = _parse_side(expression[match.end() :], f'after "{op}"', expression)
    return Gate(expression=expression, left=left, op=op, right=right)


def _listed(names: Iterable[str]) -> str:
    ordered = sorted(names)
    if not ordered:
        return "none"
    shown = ", ".join(ordered[:_MAX_LISTED])
    more = len(ordered) - _MAX_LISTED
    return f"{shown} and {more} more" if more > 0 else shown


def check_gates(
    gates: Sequence[Gate],
    arms: Collection[str],
    metrics: Mapping[str, Collection[str]],
    baseline: str | None = None,
) -> None:
    """Check that every gate names known arms and metrics, before a run starts.

    Args:
        gates: the parsed gates.
        arms: the arms (strategies) the run compares.
        metrics: arm → the metric names that arm will report.
        baseline: the arm differences are taken against; with it, a ``delta(ARM,BASE)``
            term must compare another arm with it (no other difference is computed).

    Raises:
        UsageError: (field ``--fail-if``) a gate names an arm not in ``arms`` or a metric its
            arm does not report (the message lists the known names, at most 10, then a
            count), or a difference the run does not compute.
    """
    for gate in gates:
        if baseline is not None:
            for _, term in (*gate.left.terms, *gate.right.terms):
                if isinstance(term, DeltaRef) and (term.base != baseline
                                                   or term.arm == baseline):  # fmt: skip
                    raise _error(f'"{term}" in "{gate.expression}" is not computed: '
                                 f'differences are ARM minus the baseline, "{baseline}" '
                                 f"(delta(ARM,{baseline}); see --baseline)")  # fmt: skip
        for arm, metric in sorted(gate.references()):
            if arm not in arms:
                raise _error(
                    f'unknown arm "{arm}" in "{gate.expression}" (known: {_listed(arms)})'
                )
            known = metrics.get(arm, ())
            if metric not in known:
                raise _error(
                    f'unknown metric "{metric}" of arm "{arm}" in "{gate.expression}" '
                    f"(known: {_listed(known)})"
                )


def _number(value: float) -> str:
    return f"{value:.6g}"


def evaluate_gates(
    gates: Sequence[Gate], means: Means, deltas: Deltas | None = None
) -> list[GateResult]:
    """Evaluate each gate against the arms' means and the paired differences.

    Args:
        gates: the parsed gates.
        means: arm → metric → mean over queries (None when the arm has no value).
        deltas: ``(arm, base)`` → metric → interval of the per-query differences arm - base
            (`statistics.paired_bootstrap`), read by ``delta(ARM,BASE)`` terms; None when
            no gate reads one.

    Returns:
        One result per gate, in order; violated when the condition holds, or when a term
        has no value (fail closed, reason ``"no value for ARM.METRIC"``).
    """
    results: list[GateResult] = []
    for gate in gates:
        left, missing_left = gate.left.value(means, deltas)
        right, missing_right = gate.right.value(means, deltas)
        missing = list(dict.fromkeys(missing_left + missing_right))
        if left is None or right is None:
            reason = f"no value for {', '.join(missing)}"
            violated = True
        else:
            violated = gate.holds(left, right)
            comparison = f"{_number(left)} {gate.op} {_number(right)}"
            reason = comparison if violated else f"{comparison} is false"
        results.append(
            GateResult(
                expression=gate.expression, violated=violated, left=left, right=right,
                reason=reason,
            )
        )
    return results
