import asyncio

import pytest

from unified_kg_rag.domain.index.delta import diff_documents
from unified_kg_rag.domain.llm.usage import record_usage, usage_scope
from unified_kg_rag.domain.models import DocRecord, DocStatus, TokenUsage
from unified_kg_rag.util.errors import ConfigurationError
from unified_kg_rag.util.registry import Registry

pytestmark = pytest.mark.unit


def _rec(doc: str, h: str, status: DocStatus = DocStatus.PROCESSED) -> DocRecord:
    return DocRecord(document_id=doc, path=doc, source_scope="s", content_hash=h, status=status)


def test_diff_partitions_by_hash_and_status() -> None:
    records = [
        _rec("same", "h1"),
        _rec("edit", "h1"),
        _rec("gone", "h1"),
        _rec("bad", "h1", DocStatus.FAILED),
        _rec("half", "h1", DocStatus.PENDING),
    ]
    current = {"same": "h1", "edit": "h2", "bad": "h1", "half": "h1", "fresh": "h9"}
    delta = diff_documents(records, current)
    assert delta.new == ("fresh",)
    assert delta.changed == ("edit",)
    assert delta.unchanged == ("same",)
    assert delta.failed_before == ("bad", "half")
    assert delta.missing == ("gone",)


def test_usage_scopes_nest_and_follow_tasks() -> None:
    async def main() -> tuple[TokenUsage, TokenUsage]:
        with usage_scope() as outer:
            record_usage(TokenUsage(calls=1, input_tokens=10))
            with usage_scope() as inner:

                async def child() -> None:
                    record_usage(TokenUsage(calls=2, output_tokens=5))

                await asyncio.gather(child(), child())
        record_usage(TokenUsage(calls=100))  # outside every scope: counted nowhere
        return outer, inner

    outer, inner = asyncio.run(main())
    assert (inner.calls, inner.output_tokens, inner.input_tokens) == (4, 10, 0)
    assert (outer.calls, outer.output_tokens, outer.input_tokens) == (5, 10, 10)


def test_registry_lists_known_names_on_a_miss() -> None:
    reg: Registry[int] = Registry("widget", field="widgets.kind")
    reg.register("Alpha", 1)
    reg.register("beta", 2)
    assert reg.get("ALPHA") == 1 and "beta" in reg and reg.names() == ["alpha", "beta"]
    with pytest.raises(ConfigurationError, match=r"widgets\.kind: unknown widget 'gamma'; registered: alpha, beta"):
        reg.get("gamma")
    with pytest.raises(ValueError, match="already registered"):
        reg.register("alpha", 3)
