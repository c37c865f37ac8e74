"""The public surface: every exported name resolves, and importing the package is cheap."""

import subprocess
import sys

import pytest

import unified_kg_rag

pytestmark = pytest.mark.unit


def test_every_exported_name_resolves() -> None:
    for name in unified_kg_rag.__all__:
        assert getattr(unified_kg_rag, name) is not None, name


def test_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = unified_kg_rag.nope  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "module",
    ["unified_kg_rag", "unified_kg_rag.bootstrap", "unified_kg_rag.cli.app",
     "unified_kg_rag.retrieval.chain", "unified_kg_rag.ingestion.pipeline"],
)  # fmt: skip
def test_importing_loads_no_heavy_library(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "heavy = {'torch', 'sentence_transformers', 'transformers', 'openai', 'pypdf', 'docx',"
        " 'bs4', 'charset_normalizer', 'httpx'} & set(sys.modules)\n"
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_all_lists_exactly_the_lazy_exports() -> None:
    exports = unified_kg_rag._EXPORTS  # type: ignore[attr-defined]
    assert sorted(unified_kg_rag.__all__) == sorted(["__version__", *exports])
