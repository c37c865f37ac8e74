"""Models per role: `llm.tiers`/`llm.roles` configuration, `RoleModels`, the role builder, and
the per-role prices of the summary tree's estimate."""

from __future__ import annotations

from pathlib import Path

import pytest

from unified_kg_rag.adapters.llm.roles import build_role_models, check_role_models
from unified_kg_rag.config.load import load_config
from unified_kg_rag.config.models import LLMConfig, UkrConfig
from unified_kg_rag.domain.llm.roles import ROLES, RoleModels
from unified_kg_rag.ingestion.graph.estimate import CostEstimate, add_tree_cost
from unified_kg_rag.ingestion.units import UnitText
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.upper().startswith("UKR_"):
            monkeypatch.delenv(key)


def _scripted(reply: str, **prices: float) -> dict[str, object]:
    return {"kind": "scripted", "scripted": {"default_reply": reply}, **prices}


def test_role_models_fall_back_to_the_default_and_reject_unknown_roles() -> None:
    models = RoleModels("d", {"reports": "s", "query": None}, {"reports": "strong"})
    assert [models.for_role(r) for r in ROLES] == ["d", "d", "s", None, "d", "d"]
    assert models.source("reports") == "strong" and models.source("answer") == "default"
    assert RoleModels.single("x").for_role("judge") == "x"
    assert RoleModels(None).any_model is False and models.any_model is True
    with pytest.raises(KeyError, match="unknown model role 'writer'"):
        models.for_role("writer")  # type: ignore[arg-type]


def test_yaml_tiers_and_roles_read_tier_names_and_inline_models(tmp_path: Path) -> None:
    (tmp_path / "ukr.yaml").write_text(
        "llm:\n  kind: scripted\n  max_concurrency: 2\n"
        "  tiers:\n    fast: {kind: openai, openai: {model: small}, input_price_per_1m: 0.1}\n"
        "  roles:\n    extraction: fast\n"
        "    answer: {kind: bedrock, bedrock: {model_id: big}, output_price_per_1m: 9}\n"
    )
    llm = load_config(tmp_path).llm
    assert llm.role_choice("extraction")[0] == "fast"
    assert llm.role_choice("extraction")[1] == llm.tiers.fast
    source, own = llm.role_choice("answer")
    assert source == "inline" and own is not None and own.label == "bedrock:big"
    assert llm.role_choice("reports") == ("default", None)
    # a tier's model keeps the shared settings and has no tiers or roles of its own
    section = llm.section_for(own)
    assert (section.kind, section.max_concurrency, section.output_price_per_1m) == (
        "bedrock", 2, 9)
    assert section.input_price_per_1m is None  # the role's own prices, not the default's
    assert section.roles.answer == "default" and section.tiers.fast is None


def test_roles_and_tiers_read_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UKR_LLM__ROLES__REPORTS", "strong")
    monkeypatch.setenv("UKR_LLM__TIERS__STRONG__KIND", "openai")
    monkeypatch.setenv("UKR_LLM__TIERS__STRONG__OPENAI__MODEL", "gpt-4o")
    llm = load_config(tmp_path).llm
    assert llm.role_choice("reports")[0] == "strong"
    assert llm.tiers.strong is not None and llm.tiers.strong.label == "openai:gpt-4o"


def test_an_unconfigured_tier_names_the_role_field() -> None:
    llm = LLMConfig(kind="scripted", roles={"summaries": "fast"})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError) as caught:
        check_role_models(llm)
    assert caught.value.field == "llm.roles.summaries"
    assert str(caught.value) == ("llm.roles.summaries: names the tier `fast`, but "
                                 "llm.tiers.fast is not configured")  # fmt: skip


@pytest.mark.parametrize(
    ("llm", "field"),
    [
        ({"tiers": {"fast": {"kind": "none"}}, "roles": {"query": "fast"}}, "llm.tiers.fast.kind"),
        ({"roles": {"answer": {"kind": "none"}}}, "llm.roles.answer.kind"),
        ({"tiers": {"strong": {"kind": "nope"}}, "roles": {"reports": "strong"}},
         "llm.tiers.strong.kind"),
        ({"roles": {"judge": {"kind": "nope"}}}, "llm.roles.judge.kind"),
    ],
)
def test_a_tier_or_own_model_without_a_usable_provider_names_its_field(
    llm: dict[str, object], field: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        check_role_models(LLMConfig(**llm))  # type: ignore[arg-type]
    assert caught.value.field == field


def test_the_builder_builds_each_distinct_model_once() -> None:
    llm = LLMConfig.model_validate({
        **_scripted("default"),
        "tiers": {"fast": _scripted("fast"), "strong": _scripted("default")},
        "roles": {"extraction": "fast", "query": "fast", "reports": "strong",
                  "answer": _scripted("own")},
    })
    models = build_role_models(llm, None)
    assert models.for_role("extraction") is models.for_role("query")
    # the strong tier is the same provider and settings as the default: one model
    assert models.for_role("reports") is models.default
    assert models.for_role("answer") not in (models.default, models.for_role("extraction"))
    assert models.source("reports") == "strong" and models.source("answer") == "inline"
    assert models.for_role("summaries") is models.default


def test_no_default_model_but_an_extraction_tier_builds_graphs_by_default() -> None:
    config = UkrConfig(llm={"tiers": {"fast": _scripted("x")}, "roles": {"extraction": "fast"}})  # type: ignore[arg-type]
    assert config.methodologies() == ["graphrag", "lightrag"]
    models = build_role_models(config.llm, None)
    assert models.default is None and models.for_role("extraction") is not None
    assert UkrConfig().methodologies() == ["lazy"]


def test_a_judge_section_with_roles_is_refused() -> None:
    with pytest.raises(ValueError, match=r"llm\.roles\.judge"):
        UkrConfig(evaluation={"judge": {"kind": "scripted", "roles": {"answer": "fast"}}})  # type: ignore[arg-type]


def test_tree_estimate_prices_the_summaries_role_with_its_model() -> None:
    config = UkrConfig(
        llm={**_scripted("d", input_price_per_1m=1.0, output_price_per_1m=2.0),
             "tiers": {"fast": _scripted("f", input_price_per_1m=0.25, output_price_per_1m=0.5)},
             "roles": {"summaries": "fast"}},
        graph={"raptor": {"min_leaves": 2, "target_children": 2, "max_levels": 1,
                          "max_summary_tokens": 100}},
    )  # type: ignore[arg-type]

    class Words:
        def count(self, text: str) -> int:
            return len(text.split())

        def truncate(self, text: str, max_tokens: int) -> str:
            return " ".join(text.split()[:max_tokens])

    units = [UnitText(f"u{i}", "one two three four five", "a.txt") for i in range(4)]
    est = add_tree_cost(CostEstimate(units=4), units, config=config, counter=Words())
    fig = est.roles["summaries"]
    # one level: ceil(4 / 2) = 2 calls reading the 4 * 5 unit words and two 180-token prompts
    assert (fig.calls_min, fig.input_tokens_min, fig.output_tokens) == (2, 20 + 2 * 180, 200)
    assert fig.model == "scripted (fast)"
    assert fig.cost_min == pytest.approx((380 * 0.25 + 200 * 0.5) / 1e6)
    assert est.cost_min == fig.cost_min and est.tree_summaries == 2


def test_a_tier_asks_the_top_level_server_with_its_key_unless_it_names_its_own(
    tmp_path: Path,
) -> None:
    # a tier naming only its model must not fall back to api.openai.com (with a key set in
    # the environment the corpus would leave the machine)
    (tmp_path / "ukr.yaml").write_text(
        "llm:\n  kind: openai\n"
        "  openai: {base_url: 'http://127.0.0.1:8080/v1', api_key: local-key, model: big,"
        " timeout_s: 7}\n"
        "  input_price_per_1m: 5\n"
        "  tiers:\n    fast: {kind: openai, openai: {model: small}}\n"
        "    strong: {kind: openai, openai: {model: huge, base_url: 'http://10.0.0.2:9000/v1'}}\n"
    )
    llm = load_config(tmp_path).llm
    assert llm.tiers.fast is not None and llm.tiers.strong is not None
    fast = llm.section_for(llm.tiers.fast)
    assert (fast.openai.base_url, fast.openai.model, fast.openai.timeout_s) == (
        "http://127.0.0.1:8080/v1", "small", 7)
    assert fast.openai.api_key is not None
    assert fast.openai.api_key.get_secret_value() == "local-key"
    assert fast.input_price_per_1m is None  # prices are the model's own, never inherited
    strong = llm.section_for(llm.tiers.strong)
    assert (strong.openai.base_url, strong.openai.model) == ("http://10.0.0.2:9000/v1", "huge")
    models = build_role_models(llm.model_copy(update={"roles": llm.roles.model_copy(
        update={"extraction": "fast", "answer": "strong"})}), None)  # fmt: skip
    extraction, answer = models.for_role("extraction"), models.for_role("answer")
    assert extraction is not None and answer is not None
    assert extraction.model_id == "openai:small@http://127.0.0.1:8080/v1"
    assert answer.model_id == "openai:huge@http://10.0.0.2:9000/v1"


def test_status_names_the_extraction_model_that_writes_summaries_and_reports(
    tmp_path: Path,
) -> None:
    import asyncio

    from unified_kg_rag.bootstrap import build_app

    config = UkrConfig.model_validate({"llm": {
        "kind": "none", "tiers": {"fast": _scripted("x")}, "roles": {"extraction": "fast"}}})

    async def rows() -> dict[str, tuple[str | None, str]]:
        async with build_app(config, tmp_path) as app:
            return {r.role: (r.model, r.source) for r in app.role_status()}

    got = asyncio.run(rows())
    assert got["extraction"][1] == "fast" and got["extraction"][0] is not None
    assert got["reports"] == (got["extraction"][0], "extraction (fast)")
    assert got["summaries"] == (got["extraction"][0], "extraction (fast)")
    assert got["answer"] == (None, "default")


def test_estimate_and_config_show_name_the_extraction_model_reports_fall_back_to() -> None:
    from unified_kg_rag.cli.config_show import _role_comment

    config = UkrConfig.model_validate({"llm": {
        "kind": "none", "tiers": {"fast": _scripted("x", input_price_per_1m=1.0)},
        "roles": {"extraction": "fast"}}})
    assert config.llm.serving("reports") == ("extraction (fast)", config.llm.tiers.fast)
    assert config.llm.serving("answer") == ("default", None)
    est = CostEstimate()
    est.add("reports", config, 2, 2, 100, 100, 10)
    assert est.roles["reports"].model == "scripted (extraction (fast))"
    assert est.roles["reports"].input_price_per_1m == 1.0
    assert "#   reports: scripted (extraction (fast))" in _role_comment(config)


def test_config_show_names_the_server_a_tier_inherits() -> None:
    from unified_kg_rag.cli.config_show import _role_comment

    config = UkrConfig.model_validate({"llm": {
        "kind": "openai", "openai": {"base_url": "http://127.0.0.1:8080/v1", "model": "big"},
        "tiers": {"fast": {"kind": "openai", "openai": {"model": "small"}}},
        "roles": {"extraction": "fast"}}})
    comment = _role_comment(config)
    assert "#   extraction: openai:small at http://127.0.0.1:8080/v1 (fast)" in comment
    assert "#   answer: openai:big at http://127.0.0.1:8080/v1\n" in comment
