from pathlib import Path

import pytest
import yaml

from unified_kg_rag.config.load import load_config
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.config.template import render_template
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.upper().startswith("UKR_"):
            monkeypatch.delenv(key)


def test_defaults_work_offline(tmp_path: Path) -> None:
    cfg = load_config(tmp_path)
    assert (cfg.llm.kind, cfg.embeddings.kind, cfg.stores.kind) == ("none", "local", "sqlite")
    assert (cfg.chunking.size_tokens, cfg.chunking.overlap_tokens) == (600, 100)


def test_precedence_defaults_then_file_then_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ukr.yaml").write_text(
        "query:\n  top_k: 7\n  rrf_k: 30\nllm:\n  openai:\n    model: from-file\n"
    )
    monkeypatch.setenv("UKR_QUERY__TOP_K", "3")
    monkeypatch.setenv("UKR_LLM__OPENAI__BASE_URL", "http://127.0.0.1:9/v1")
    cfg = load_config(tmp_path)
    assert cfg.query.top_k == 3  # environment wins over the file
    assert cfg.query.rrf_k == 30  # the file wins over the default
    assert cfg.query.max_context_tokens == UkrConfig().query.max_context_tokens
    assert cfg.llm.openai.model == "from-file"  # nested file value survives a sibling env value
    assert cfg.llm.openai.base_url == "http://127.0.0.1:9/v1"


def test_invalid_value_in_file_names_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "ukr.yaml").write_text("chunking:\n  size_tokens: ten\n")
    with pytest.raises(ConfigurationError) as err:
        load_config(tmp_path)
    assert "ukr.yaml: chunking.size_tokens:" in str(err.value)
    assert err.value.exit_code == 2


def test_invalid_value_in_environment_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UKR_QUERY__TOP_K", "0")
    with pytest.raises(ConfigurationError, match=r"UKR_QUERY__TOP_K: query\.top_k: "):
        load_config(tmp_path)


def test_unknown_key_and_cross_field_rules_fail(tmp_path: Path) -> None:
    (tmp_path / "ukr.yaml").write_text("query:\n  topk: 3\n")
    with pytest.raises(ConfigurationError, match=r"query\.topk: Extra inputs"):
        load_config(tmp_path)
    (tmp_path / "ukr.yaml").write_text("chunking:\n  size_tokens: 50\n  overlap_tokens: 50\n")
    with pytest.raises(ConfigurationError, match="overlap_tokens must be smaller"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    ("content", "message"),
    [("query: [1, 2\n", "line 2: expected"), ("- a\n- b\n", "top level must be a mapping")],
)
def test_malformed_yaml(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "ukr.yaml").write_text(content)
    with pytest.raises(ConfigurationError, match=message):
        load_config(tmp_path)


def test_secrets_are_masked_when_dumped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UKR_LLM__OPENAI__API_KEY", "sk-very-secret")
    cfg = load_config(tmp_path)
    assert cfg.llm.openai.api_key is not None
    assert cfg.llm.openai.api_key.get_secret_value() == "sk-very-secret"
    assert "sk-very-secret" not in str(cfg.model_dump(mode="json"))


def test_template_is_valid_yaml_holding_the_defaults(tmp_path: Path) -> None:
    text = render_template()
    data = yaml.safe_load(text)
    defaults = UkrConfig().model_dump(mode="json")
    # a judge is one model: the tiers and roles its model type has are left unlisted
    judge = defaults["evaluation"]["judge"]
    llm = UkrConfig().llm
    assert (judge.pop("tiers"), judge.pop("roles")) == (
        llm.tiers.model_dump(mode="json"), llm.roles.model_dump(mode="json"))
    assert data == defaults
    assert "tiers" not in data["evaluation"]["judge"]
    assert "# Longest text unit" in text  # field descriptions become comments
    (tmp_path / "ukr.yaml").write_text(text)
    assert load_config(tmp_path) == UkrConfig()


def test_every_field_is_described() -> None:
    from pydantic import BaseModel

    def walk(model: type[BaseModel], path: str) -> list[str]:
        missing = []
        for name, info in model.model_fields.items():
            if not info.description:
                missing.append(f"{path}{name}")
            ann = info.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                missing += walk(ann, f"{path}{name}.")
        return missing

    assert walk(UkrConfig, "") == []


def test_generated_reference_pages_are_current() -> None:
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("gen_docs", root / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stale = [
        str(path.relative_to(root))
        for path, text in module.pages().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    assert stale == [], f"run `python scripts/gen_docs.py` to update {stale}"


def test_undecodable_list_in_environment_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UKR_PARSING__EXCLUDE", "*.md")
    with pytest.raises(ConfigurationError, match=r"UKR_PARSING__EXCLUDE: parsing: .*JSON") as err:
        load_config(tmp_path)
    assert err.value.exit_code == 2
    monkeypatch.setenv("UKR_PARSING__EXCLUDE", '["*.md"]')
    assert load_config(tmp_path).parsing.exclude == ["*.md"]


@pytest.mark.parametrize("url", ["not-a-url", "ftp://host/v1", "127.0.0.1:8080/v1"])
def test_base_urls_must_be_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.setenv("UKR_LLM__OPENAI__BASE_URL", url)
    with pytest.raises(ConfigurationError, match=r"llm\.openai\.base_url: .*http"):
        load_config(tmp_path)


_INVALID = "holds text that is not valid Unicode"


def test_invalid_unicode_in_a_setting_names_the_file_or_variable_and_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15 item 6, the configuration entry point: a lone surrogate (a YAML ``\\ud83d``
    escape, a byte that is not UTF-8 in a ``UKR_`` variable) in a mapping or list passed
    validation and failed the run later (UnicodeEncodeError, exit 1); in a plain field the
    error read "unable to parse raw data as a unicode string"."""
    config = tmp_path / "ukr.yaml"
    config.write_text('messages:\n  handle_names: {"+1555": "Bob \\ud83d"}\n', encoding="utf-8")
    with pytest.raises(ConfigurationError) as err:
        load_config(tmp_path)
    assert str(err.value).startswith(f"{config}: messages.handle_names.+1555: {_INVALID}")
    assert err.value.exit_code == 2
    config.write_text('parsing:\n  exclude: ["*.tmp", "x\\udce9*"]\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match=rf"parsing\.exclude\.1: {_INVALID}"):
        load_config(tmp_path)
    config.write_text('messages:\n  owner_label: "Sam \\ud83d"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match=rf"messages\.owner_label: {_INVALID}"):
        load_config(tmp_path)
    config.unlink()
    monkeypatch.setenv("UKR_MESSAGES__OWNER_LABEL", "Sam\udce9")  # the bytes b"Sam\xe9"
    with pytest.raises(ConfigurationError) as err:
        load_config(tmp_path)
    assert str(err.value).startswith(
        f"UKR_MESSAGES__OWNER_LABEL: messages.owner_label: {_INVALID}")
    monkeypatch.delenv("UKR_MESSAGES__OWNER_LABEL")
    monkeypatch.setenv("UKR_MESSAGES__HANDLE_NAMES", '{"+1555": "Bob \\ud83d"}')
    with pytest.raises(ConfigurationError, match=rf"^UKR_MESSAGES__HANDLE_NAMES: messages\."
                       rf"handle_names\.\+1555: {_INVALID}"):
        load_config(tmp_path)
    monkeypatch.delenv("UKR_MESSAGES__HANDLE_NAMES")
    # a file name may be any bytes the file system allows: path settings keep them
    monkeypatch.setenv("UKR_MESSAGES__HANDLES_FILE", "caf\udce9.yaml")
    assert load_config(tmp_path).messages.handles_file == "caf\udce9.yaml"


def test_a_bare_yaml_off_is_the_off_choice(tmp_path: Path) -> None:
    # YAML 1.1 reads a bare `off` as false; settings with an `off` choice take it as "off"
    (tmp_path / "ukr.yaml").write_text(
        "graph:\n  extraction:\n    grounding: off\n"
        "query:\n  abstention:\n    mode: off\n  tree:\n    graph_signal: off\n",
        encoding="utf-8",
    )
    config = load_config(tmp_path)
    assert config.graph.extraction.grounding == "off"
    assert config.query.abstention.mode == "off"
    assert config.query.tree.graph_signal == "off"
    (tmp_path / "ukr.yaml").write_text("graph:\n  extraction:\n    grounding: on\n")
    with pytest.raises(ConfigurationError, match=r"graph\.extraction\.grounding"):
        load_config(tmp_path)
