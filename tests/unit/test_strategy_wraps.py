"""A wrapper strategy's methodology follows the strategy it wraps (`StrategySpec.wraps`), and
`auto`'s multi-hop test (`looks_multi_hop`)."""

from __future__ import annotations

import pytest

from unified_kg_rag.config.models import QueryConfig
from unified_kg_rag.retrieval.strategies import STRATEGIES
from unified_kg_rag.retrieval.strategies.auto import looks_multi_hop, routable_candidates
from unified_kg_rag.util.errors import MethodologyNotIndexedError

LOCAL = QueryConfig.model_validate({"iterative": {"base": "local"}})


def test_iterative_needs_what_its_base_needs_under_the_config() -> None:
    spec = STRATEGIES.get("iterative")
    assert spec.needs == ("hipporag", "lazy")  # the default base, ppr
    assert spec.needs_for(LOCAL) == ("graphrag",)
    assert spec.needs_for(QueryConfig.model_validate({"iterative": {"base": "mix"}})) == (
        "lightrag",
    )
    assert spec.serves(["lazy"]) and not spec.serves(["lazy"], LOCAL)
    with pytest.raises(MethodologyNotIndexedError, match=r"through 'local'.*holds: lazy"):
        spec.require(["lazy"], "default", LOCAL)
    assert STRATEGIES.get("ppr").needs_for(LOCAL) == ("hipporag", "lazy")  # others unchanged
    assert [s.name for s in routable_candidates(["lazy"], config=LOCAL)] == ["ppr", "naive"]
    assert "iterative" in [s.name for s in routable_candidates(["lazy"])]


@pytest.mark.parametrize(
    ("question", "multi"),
    [
        ("Who is the spouse of the director of Titanic?", True),
        ("What is the birthplace of Obama's wife?", True),
        ("In what county is the city where Harris W. Fawell was born?", True),
        ("What is the capital of France?", False),
        ("Who is the CEO of Acme?", False),
        ("Who wrote Hamlet?", False),
    ],
)
def test_looks_multi_hop(question: str, multi: bool) -> None:
    assert looks_multi_hop(question) is multi
