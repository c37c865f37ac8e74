"""Crash injection for the store ports: stop a run at its N-th store write.

`faulty(stores, plan)` returns an `IndexStores` whose four ports count every write call
(`WRITES`: upserts, deletes, puts, ``bind_embedding``) in ``plan.calls``; the call numbered
``plan.crash_at`` (1-based) raises `InjectedCrash` *before* reaching the store, as a process
killed just before that write would leave it. Reads and the lease calls pass through
uncounted.

`InjectedCrash` derives from `BaseException`, like `KeyboardInterrupt`: no ``except
Exception`` handler of the library swallows it (a per-unit failure handler would otherwise
turn the "kill" into a recorded failure), so the run stops where it was, as a killed one does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from unified_kg_rag.ports import IndexStores

__all__ = ["WRITES", "FaultPlan", "InjectedCrash", "faulty"]

WRITES = frozenset({
    "bind_embedding", "upsert", "delete", "upsert_entities", "upsert_relationships",
    "delete_entities", "delete_relationships", "upsert_communities", "delete_communities",
    "upsert_reports", "put", "put_many",
})
"""Port methods that write to a store (the lease calls excluded)."""


class InjectedCrash(BaseException):
    """Raised at the planned write (see the module docstring)."""


@dataclass
class FaultPlan:
    """Which write to crash at, and the log of the writes seen.

    Attributes:
        crash_at: 1-based number of the write that raises; None never raises.
        calls: ``port.method`` of every write attempted, in order (the crashing one too).
    """

    crash_at: int | None = None
    calls: list[str] = field(default_factory=list)

    @property
    def crashed(self) -> bool:
        """True when the planned write was reached."""
        return self.crash_at is not None and len(self.calls) >= self.crash_at


class _Faulty:
    def __init__(self, port: object, label: str, plan: FaultPlan) -> None:
        self._port = port
        self._label = label
        self._plan = plan

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._port, name)
        if name not in WRITES:
            return attribute
        method: Callable[..., Awaitable[Any]] = attribute

        async def counted(*args: Any, **kwargs: Any) -> Any:
            plan = self._plan
            plan.calls.append(f"{self._label}.{name}")
            if plan.crash_at is not None and len(plan.calls) == plan.crash_at:
                raise InjectedCrash(f"killed before write {plan.crash_at}: {plan.calls[-1]}")
            return await method(*args, **kwargs)

        return counted


def faulty(stores: IndexStores, plan: FaultPlan) -> IndexStores:
    """Return ``stores`` with every write counted, and the planned one crashing."""
    return IndexStores(
        name=stores.name,
        search=_Faulty(stores.search, "search", plan),  # type: ignore[arg-type]
        graph=_Faulty(stores.graph, "graph", plan),  # type: ignore[arg-type]
        registry=_Faulty(stores.registry, "registry", plan),  # type: ignore[arg-type]
        records=_Faulty(stores.records, "records", plan),  # type: ignore[arg-type]
    )
