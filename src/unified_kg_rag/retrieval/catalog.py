"""Which strategies an index serves, and why not: ``ukr strategies`` and the service share it.

Each registered strategy with its one line, the methodologies it reads, whether the index
holds one of them (and text units at all), and when not, how to get it
(`domain.index.methodologies`). Reads two counts and one record; loads no model.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from unified_kg_rag.config.models import QueryConfig
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE, METHODOLOGIES_KEY, parse_methodologies
from unified_kg_rag.domain.index.methodologies import how_to_build
from unified_kg_rag.domain.models import Collection
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.strategies import STRATEGIES

__all__ = ["StrategyCatalog", "StrategyInfo", "strategy_catalog"]


class StrategyInfo(BaseModel):
    """One registered strategy, as an index sees it.

    Attributes:
        name: the strategy (``--strategy NAME``).
        description: its one line.
        methodologies: the methodologies it reads, any one of which serves (empty: text
            units only).
        served: the index can answer with it now.
        missing: the methodologies it lacks (empty when served, or when only text units are
            missing).
        how: what to do to get it served (empty when served).
    """

    name: str
    description: str
    methodologies: list[str] = Field(default_factory=list)
    served: bool
    missing: list[str] = Field(default_factory=list)
    how: str = ""


class StrategyCatalog(BaseModel):
    """Every registered strategy against one index.

    Attributes:
        index: the index name.
        methodologies: the methodologies the index holds.
        text_units: text units it holds (none: no strategy serves).
        note: what holds for every strategy (an empty index), else empty.
        strategies: by name.
    """

    index: str
    methodologies: list[str] = Field(default_factory=list)
    text_units: int = 0
    note: str = ""
    strategies: list[StrategyInfo] = Field(default_factory=list)


async def strategy_catalog(
    stores: IndexStores, config: QueryConfig | None = None
) -> StrategyCatalog:
    """Describe every registered strategy against the index of ``stores``.

    ``config``: the query config in effect (a wrapper strategy's methodology follows the
    strategy it wraps there; None: the defaults).

    Raises:
        StoreError: a store failed.
    """
    units = await stores.search.count(Collection.TEXT_UNITS)
    held = parse_methodologies(await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY))
    first = f"index documents first with `ukr index PATH --index {stores.name}`"
    infos = []
    for name in STRATEGIES.names():
        spec = STRATEGIES.get(name)
        needs = spec.needs_for(config)
        missing = [] if spec.serves(held, config) else list(needs)
        infos.append(StrategyInfo(
            name=name, description=spec.description, methodologies=list(needs),
            served=bool(units) and not missing, missing=missing,
            how=how_to_build(missing) if missing else ("" if units else first),
        ))  # fmt: skip
    return StrategyCatalog(
        index=stores.name, methodologies=list(held), text_units=units,
        note="" if units else f"index {stores.name!r} holds no text units: {first}",
        strategies=infos,
    )  # fmt: skip
