"""The `tree` strategy's selection step and the `summary` section type, on hand-made candidates."""

from __future__ import annotations

import math

from unified_kg_rag.config.models import QueryConfig
from unified_kg_rag.domain.models import SearchHit
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.retrieval.context import pack_context, quota_of, section_title
from unified_kg_rag.retrieval.strategies.base import Candidate, StrategyResult
from unified_kg_rag.retrieval.strategies.tree_select import cap_levels, expand_summaries


def _summary(sid: str, level: int, score: float, lineage: tuple[str, ...]) -> Candidate:
    return Candidate(kind="summary", id=sid, text=f"summary {sid}", score=score,
                     text_unit_ids=lineage,
                     metadata={"level": level, "n_leaves": len(lineage)})  # fmt: skip


def _unit(uid: str, score: float) -> Candidate:
    return Candidate(kind="text_unit", id=uid, text=f"passage {uid}", score=score,
                     text_unit_ids=(uid,))  # fmt: skip


def test_cap_levels_passes_over_a_full_level_until_top_k_are_kept() -> None:
    ranked = [_summary("a", 1, 0.9, ()), _summary("b", 1, 0.8, ()), _summary("c", 2, 0.7, ()),
              _summary("d", 1, 0.6, ()), _summary("e", 3, 0.5, ()), _summary("f", 2, 0.4, ())]
    kept, capped = cap_levels(ranked, top_k=3, per_level=1)
    assert [c.id for c in kept] == ["a", "c", "e"] and capped == 2  # b and d passed over
    kept, capped = cap_levels(ranked, top_k=2, per_level=2)
    assert [c.id for c in kept] == ["a", "b"] and capped == 0


def test_expansion_seats_passages_just_after_their_summary_and_never_twice() -> None:
    s1 = _summary("s1", 1, 0.5, ("u1", "u2", "u3"))
    s2 = _summary("s2", 2, 0.3, ("u1", "u2", "u3", "u4", "u5"))
    passages = [_unit("u9", 0.6), _unit("u1", 0.55), _unit("u8", 0.4), _unit("u3", 0.2)]
    pool = [SearchHit(id=u, score=1.0 - i / 10, text=f"passage {u}")
            for i, u in enumerate(["u3", "u1", "u4", "u2", "u5"])]  # fmt: skip
    out = expand_summaries([s1, s2], passages, pool, per_summary=2)
    below1, below2 = math.nextafter(0.5, -math.inf), math.nextafter(0.3, -math.inf)
    # s1's best two: u3 (moved up from 0.2 to just below s1) and u1 (0.55 >= 0.5: stays);
    # s2's best two: u3 (s1's already) and u1 (taken): nothing more, though u4 is next
    assert [(c.id, c.score, c.metadata.get("expanded_from")) for c in out] == [
        ("u9", 0.6, None), ("u1", 0.55, None), ("u3", below1, "s1"), ("u8", 0.4, None)]
    out = expand_summaries([s1, s2], passages, pool, per_summary=3)
    # s1 adds u3 then u2 (u4 is not its own); s2: u3, u1 taken, then u4 after 0.3's rank
    assert [(c.id, c.score, c.metadata.get("expanded_from")) for c in out] == [
        ("u9", 0.6, None), ("u1", 0.55, None), ("u3", below1, "s1"), ("u2", below1, "s1"),
        ("u8", 0.4, None), ("u4", below2, "s2")]  # fmt: skip
    assert out[-1].text == "passage u4" and out[-1].text_unit_ids == ("u4",)


def test_a_summary_reads_as_its_level_and_passages_and_has_its_quota_and_share() -> None:
    s = _summary("s", 2, 0.5, tuple(f"u{i}" for i in range(14)))
    assert section_title(s) == "Summary (level 2, 14 passages)"
    assert section_title(_summary("t", 1, 0.5, ("u",))) == "Summary (level 1, 1 passage)"
    cfg = QueryConfig(top_k=7, tree={"summary_top_k": 4})  # type: ignore[arg-type]
    assert quota_of("summary", cfg) == 4 and quota_of("text_unit", cfg) == 7
    assert quota_of("text_unit", cfg, {"text_unit": 20}) == 20
    # the shares: 0.55 passages, 0.5 summaries: of 210 tokens, 110 and 100 (header included)
    counter = EstimateTokenCounter()
    long = " ".join(["word"] * 400)
    groups = {"text_unit": [Candidate(kind="text_unit", id="u", text=long, score=0.9)],
              "summary": [Candidate(kind="summary", id="s", text=long, score=0.5,
                                    metadata={"level": 1, "n_leaves": 3})]}  # fmt: skip
    cfg = QueryConfig(max_context_tokens=210, tree={"summary_share": 0.5})  # type: ignore[arg-type]
    sources = pack_context(StrategyResult(), groups, cfg, counter)
    assert [s.kind for s in sources] == ["summary", "text_unit"]
    assert all(s.truncated for s in sources)
    head = counter.count("[99] Summary (level 1, 3 passages)") + 2
    assert 100 - 5 < head + counter.count(sources[0].text) <= 100
