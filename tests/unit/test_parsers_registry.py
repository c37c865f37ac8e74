"""The parser registry: every extension registered, lookups case-insensitive, imports light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import unified_kg_rag.adapters.parsers as parsers
from unified_kg_rag.adapters.registry import PARSERS
from unified_kg_rag.config.models import ParsingConfig
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.unit

EXPECTED = [".csv", ".docx", ".htm", ".html", ".json", ".jsonl", ".markdown", ".md", ".pdf", ".txt"]


def test_supported_extensions() -> None:
    assert parsers.supported_extensions() == EXPECTED
    assert set(EXPECTED) <= set(PARSERS.names())


def test_exported_names_exist() -> None:
    for name in parsers.__all__:
        assert hasattr(parsers, name), name


@pytest.mark.parametrize(
    ("extension", "data", "text"),
    [
        (".TXT", b"plain words", "plain words"),
        (".Md", b"# T\nbody", "# T\nbody"),
        (".htm", b"<p>para</p>", "para"),
        (".csv", b"k,v\n1,2", "k: 1; v: 2"),
        (".json", b'{"k": "v"}', "k: v."),
        (".jsonl", b'{"k": "v"}', "k: v."),
    ],
)
def test_registered_loaders_build_working_parsers(extension: str, data: bytes, text: str) -> None:
    parser = PARSERS.get(extension)(ParsingConfig())
    assert parser.parse(data, path=f"f{extension}").text == text


def test_unknown_extension_lists_registered_ones() -> None:
    with pytest.raises(ConfigurationError) as err:
        PARSERS.get(".xyz")
    assert ".pdf" in str(err.value)
    assert ".xyz" in str(err.value)


def test_importing_parsers_loads_no_heavy_library() -> None:
    code = (
        "import sys, unified_kg_rag.adapters.parsers\n"
        "print(sorted(m for m in ('bs4', 'pypdf', 'docx', 'charset_normalizer') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"
