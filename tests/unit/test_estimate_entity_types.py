"""`estimate_graph_cost` measures the prompts with the entity types they offer (a schema's)."""

from __future__ import annotations

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.prompts import load_prompt
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.ingestion.graph.estimate import estimate_graph_cost
from unified_kg_rag.ingestion.units import UnitText


def _estimate(types: list[str] | None) -> int:
    units = [UnitText("u1", "Ada Lovelace wrote Note G in London.", "a.txt")]
    config = UkrConfig.model_validate({"graph": {"extraction": {"max_gleaning_rounds": 0}}})
    est = estimate_graph_cost(
        units, units, config=config, counter=EstimateTokenCounter(),
        extraction_template=load_prompt("extract_graph.v1"),
        gleaning_template=load_prompt("glean_graph.v1"),
        reports_needed=False, entity_types=types,
    )  # fmt: skip
    return est.input_tokens_min


def test_the_offered_entity_types_are_what_is_measured() -> None:
    default = UkrConfig().graph.extraction.entity_types
    assert _estimate(None) == _estimate(list(default))
    longer = [*default, "MEDICAL_CONDITION_OR_SYNDROME", "PHARMACEUTICAL_COMPOUND"]
    counter = EstimateTokenCounter()
    extra = counter.count(", MEDICAL_CONDITION_OR_SYNDROME, PHARMACEUTICAL_COMPOUND")
    # {entity_types} appears twice in the packaged extraction prompt
    assert _estimate(longer) - _estimate(None) >= extra
    assert _estimate(["PERSON"]) < _estimate(None)
