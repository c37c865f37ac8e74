"""Writers of small corpora with every kind of bad input the foundation issue names."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["BAD_INPUTS", "write_bad_inputs", "write_good_docs"]

LATIN1_TEXT = (
    "Le café de la rue Saint-Honoré sert une crème brûlée célèbre. "
    "Les habitués déjeunent là depuis des années, à côté du théâtre."
)
CP949_TEXT = (
    "서울특별시는 대한민국의 수도이며 가장 큰 도시이다. 한강이 도시의 중심을 가로질러 흐른다. "
    "조선 시대부터 정치와 경제의 중심지였으며 지금도 많은 사람들이 살고 있다. "
    "서울에는 궁궐과 박물관이 많아서 관광객이 많이 찾아온다."
)

BAD_INPUTS = {
    "empty.txt": "empty document",
    "blank.md": "empty document",
    "binary.txt": "binary data",
    "broken.pdf": "",
}
"""File name -> a fragment the failure reason must contain ('' = any one-line reason)."""


def write_good_docs(folder: Path) -> list[Path]:
    """Write three small, distinct documents; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    docs = {
        "owls.md": "# Owls\n\nOwls are nocturnal birds of prey. The barn owl hunts voles at night.",
        "bees.txt": "Honey bees live in colonies. A queen bee lays the eggs of the hive.",
        "ships.md": "# Ships\n\nThe clipper ship was a fast sailing vessel of the 19th century.",
    }
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [folder / n for n in docs]


def write_bad_inputs(folder: Path, *, big_line_bytes: int = 5_000_000) -> dict[str, Path]:
    """Write the bad-input files (and the latin-1, cp949 and 5 MB ones, which must index)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "empty.txt": b"",
        "blank.md": b"   \n\t\n  \r\n",
        "binary.txt": bytes(range(256)) * 64 + os.urandom(4096),
        "broken.pdf": b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer <<",
        "latin1.txt": LATIN1_TEXT.encode("latin-1"),
        "korean.txt": CP949_TEXT.encode("cp949"),
        "image.png": b"\x89PNG\r\n\x1a\n" + os.urandom(64),
    }
    words = ("lighthouse keeper lamp harbour tide " * (big_line_bytes // 35 + 1))[:big_line_bytes]
    paths["oneline.txt"] = words.encode("ascii")
    out = {}
    for name, data in paths.items():
        (folder / name).write_bytes(data)
        out[name] = folder / name
    return out
