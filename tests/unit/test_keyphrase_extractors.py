"""Keyphrase extractors of the `lazy` concept graph: YAKE, and spaCy noun phrases.

spaCy is not a dependency and no pipeline can be installed offline here, so the spaCy
adapter is tested against a stand-in module that behaves as spaCy's `load` and `noun_chunks`
do, and for its error when spaCy is absent.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any

import pytest

from unified_kg_rag.adapters.keyphrases.spacy import SpacyNounPhrases
from unified_kg_rag.adapters.registry import KEYPHRASE_EXTRACTORS
from unified_kg_rag.bootstrap import check_config
from unified_kg_rag.config.lazy import LazyIndexConfig
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.unit


@dataclass
class _Token:
    text: str
    is_stop: bool = False
    is_punct: bool = False


def _fake_spacy(chunks: list[list[_Token]]) -> types.ModuleType:
    module = types.ModuleType("spacy")

    def load(name: str, disable: list[str] | None = None) -> Any:
        if name != "xx_test_pipeline":
            raise OSError(f"[E050] Can't find model '{name}'")
        return lambda text: types.SimpleNamespace(noun_chunks=chunks)

    module.load = load  # type: ignore[attr-defined]
    return module


def test_yake_extractor_is_the_default() -> None:
    extractor = KEYPHRASE_EXTRACTORS.get("yake")(LazyIndexConfig())
    phrases = extractor.keyphrases(
        "The Analytical Engine was designed by Charles Babbage in London. Babbage never "
        "finished the Analytical Engine.", top=5, max_ngram=3,
    )
    assert extractor.name == "yake" and "analytical engine" in phrases


def test_spacy_noun_phrases_ranked_by_frequency(monkeypatch: pytest.MonkeyPatch) -> None:
    the = _Token("the", is_stop=True)
    chunks = [
        [the, _Token("Analytical"), _Token("Engine")],
        [_Token("Charles"), _Token("Babbage")],
        [the, _Token("Analytical"), _Token("Engine")],
        [_Token("a"), _Token("very"), _Token("long"), _Token("noun"), _Token("phrase")],
        [_Token(",", is_punct=True)],
    ]
    monkeypatch.setitem(sys.modules, "spacy", _fake_spacy(chunks))
    extractor = SpacyNounPhrases("xx_test_pipeline")
    assert extractor.name == "spacy:xx_test_pipeline"
    assert extractor.keyphrases("text", top=5, max_ngram=3) == [
        "analytical engine",
        "charles babbage",
    ]
    assert extractor.keyphrases("text", top=1, max_ngram=3) == ["analytical engine"]


def test_spacy_errors_name_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "spacy", _fake_spacy([]))
    with pytest.raises(ConfigurationError, match=r"graph\.lazy\.spacy_model.*not_installed"):
        SpacyNounPhrases("not_installed").keyphrases("x", top=3, max_ngram=3)
    monkeypatch.setitem(sys.modules, "spacy", None)  # import spacy raises ImportError
    with pytest.raises(ConfigurationError, match=r"graph\.lazy\.extractor: spaCy is not installed"):
        SpacyNounPhrases("en_core_web_sm").keyphrases("x", top=3, max_ngram=3)


def test_unknown_extractor_is_a_configuration_error() -> None:
    config = UkrConfig(graph={"lazy": {"extractor": "rake"}})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"graph\.lazy\.extractor.*rake.*spacy, yake"):
        check_config(config)
