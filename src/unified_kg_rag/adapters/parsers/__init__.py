"""Document parsers, one per file extension, registered into `PARSERS`.

Importing this package registers the built-in parsers (the only import-time effect); pypdf,
python-docx and beautifulsoup4 are imported when a parser of theirs first parses a file.
Every parser implements `unified_kg_rag.ports.DocumentParser` and raises `InputError` with a
one-line reason naming the file.

=====================  ==============================================================
extension              parser
=====================  ==============================================================
``.txt``               `TextParser`: decoded text as is
``.md``, ``.markdown`` `MarkdownParser`: text as is, title from the first ``# `` heading
``.html``, ``.htm``    `HtmlParser`: visible text, title from ``<title>`` or ``<h1>``
``.pdf``               `PdfParser`: text layer of each page (pypdf)
``.docx``              `DocxParser`: paragraphs and tables (python-docx)
``.csv``               `CsvParser`: ``header: value; ...`` per row
``.json``              `JsonParser`: ``key: value`` lines, or a ``title``/``text`` object
``.jsonl``             `JsonLinesParser`: one rendered paragraph per line
=====================  ==============================================================
"""

from __future__ import annotations

from unified_kg_rag.adapters.parsers.encoding import DecodedText, decode_text
from unified_kg_rag.adapters.parsers.html_page import HtmlParser
from unified_kg_rag.adapters.parsers.json_records import JsonLinesParser, JsonParser
from unified_kg_rag.adapters.parsers.pdf import PdfParser
from unified_kg_rag.adapters.parsers.plaintext import MarkdownParser, TextParser
from unified_kg_rag.adapters.parsers.tabular import CsvParser
from unified_kg_rag.adapters.parsers.word import DocxParser
from unified_kg_rag.adapters.registry import PARSERS, ParserLoader

__all__ = [
    "CsvParser",
    "DecodedText",
    "DocxParser",
    "HtmlParser",
    "JsonLinesParser",
    "JsonParser",
    "MarkdownParser",
    "PdfParser",
    "TextParser",
    "decode_text",
    "supported_extensions",
]

_BUILT_IN: dict[str, ParserLoader] = {
    ".txt": TextParser,
    ".md": MarkdownParser,
    ".markdown": MarkdownParser,
    ".html": HtmlParser,
    ".htm": HtmlParser,
    ".pdf": PdfParser,
    ".docx": DocxParser,
    ".csv": CsvParser,
    ".json": JsonParser,
    ".jsonl": JsonLinesParser,
}

for _extension, _loader in _BUILT_IN.items():
    if _extension not in PARSERS:  # re-importing (a reload in tests) must not fail
        PARSERS.register(_extension, _loader)


def supported_extensions() -> list[str]:
    """Return the file extensions a parser is registered for (``".pdf"`` ...), sorted."""
    return PARSERS.names()
