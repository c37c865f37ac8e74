"""LLM judges over the `ChatModel` port: correctness, pairwise (both orders), assertions.

Each judge is one async function returning a pydantic verdict; a failed or malformed judge
call is a verdict with its reason (never dropped, never a tie or a 0). Aggregation over many
verdicts is pure (`summarize_pairwise`, `pairwise_scores`, `majority_labels`). Seed 000 §9
and §9.3.

Not here: running judges over a dataset and comparing arms (the evaluation runner).
"""

from __future__ import annotations

from unified_kg_rag.evaluation.judges.assertions import (
    AssertionLabel,
    AssertionVerdict,
    assertion_orders,
    assertion_scores,
    judge_assertions,
    majority_labels,
)
from unified_kg_rag.evaluation.judges.common import DEADLINE, JudgeError, call_json
from unified_kg_rag.evaluation.judges.correctness import (
    CorrectnessLabel,
    CorrectnessVerdict,
    judge_correctness,
)
from unified_kg_rag.evaluation.judges.pairwise import (
    CRITERIA,
    CRITERION_DEFINITIONS,
    CriterionVerdict,
    PairwiseVerdict,
    Side,
    decided_without_judge,
    judge_pairwise,
    pairwise_scores,
)
from unified_kg_rag.evaluation.judges.pairwise_summary import (
    LENGTH_BUCKETS,
    CriterionSummary,
    LengthBucket,
    LengthSummary,
    PairwiseSummary,
    length_bucket,
    summarize_pairwise,
)

__all__ = [
    "CRITERIA",
    "CRITERION_DEFINITIONS",
    "DEADLINE",
    "LENGTH_BUCKETS",
    "AssertionLabel",
    "AssertionVerdict",
    "CorrectnessLabel",
    "CorrectnessVerdict",
    "CriterionSummary",
    "CriterionVerdict",
    "JudgeError",
    "LengthBucket",
    "LengthSummary",
    "PairwiseSummary",
    "PairwiseVerdict",
    "Side",
    "assertion_orders",
    "assertion_scores",
    "call_json",
    "decided_without_judge",
    "judge_assertions",
    "judge_correctness",
    "judge_pairwise",
    "length_bucket",
    "majority_labels",
    "pairwise_scores",
    "summarize_pairwise",
]
