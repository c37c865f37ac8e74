"""The ``graph`` settings in a build's digest: settings added by issue 21 enter only when set.

An index built before grounding, the extraction schema and claims existed must keep its
digest after an upgrade (no rebuild); setting any of them must change it.
"""

from __future__ import annotations

import pytest

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.ingestion.graph.inputs import graph_settings

# graph.extraction's fields as they were before issue 21
BEFORE = {"entity_types", "prompt_file", "gleaning_prompt_file", "max_gleaning_rounds",
          "max_reply_tokens"}  # fmt: skip


def _config(**extraction: object) -> UkrConfig:
    return UkrConfig.model_validate({"graph": {"extraction": extraction}})


def test_defaults_give_the_settings_of_an_older_build() -> None:
    settings = graph_settings(_config(), claims=False)
    assert set(settings["extraction"]) == BEFORE  # type: ignore[arg-type]
    assert "claims" not in settings
    assert "claims" in graph_settings(_config(), claims=True)


@pytest.mark.parametrize(("field", "value"), [
    ("grounding", "drop"), ("grounding_min_similarity", 80.0), ("grounding_weight", 0.25),
    ("min_confidence", 5.0), ("min_strength", 3.0), ("schema_mode", "strict"),
    ("schema_align", "llm"), ("schema_align_threshold", 70.0),
    ("schema_sources", [{"kind": "file", "path": "s.yaml"}]),
])  # fmt: skip
def test_a_set_field_enters_the_digest(field: str, value: object) -> None:
    settings = graph_settings(_config(**{field: value}), claims=False)
    extraction = settings["extraction"]
    assert isinstance(extraction, dict)
    assert set(extraction) == BEFORE | {field}
    assert settings != graph_settings(_config(), claims=False)
