"""Identity keys and content-derived ids (DESIGN.md §4).

Every id is a SHA-256 hex digest of the item's identifying content, so the same input gets
the same id in any process and under any ``PYTHONHASHSEED``. Changing a key function changes
every id and needs a full re-index.
"""

from __future__ import annotations

import unicodedata

import regex

from unified_kg_rag.util.hashing import sha256_text

__all__ = [
    "document_id",
    "entity_id",
    "entity_key",
    "relationship_id",
    "text_unit_id",
]

_QUOTES = "\"'`´‘’‚‛“”„‟«»‹›「」『』〝〞＂＇"
_DROP = str.maketrans("", "", _QUOTES + ",，、")
_SPACE_LIKE = regex.compile(r"[\s_\-‐‑‒–—―]+")
_TRAILING_PUNCT = regex.compile(r"[\s.!?;:。！？；：…]+$")


def entity_key(name: str) -> str:
    """Return the identity key of an entity name.

    NFKC, casefold, ``_`` and dashes as spaces, quote marks and commas dropped, whitespace
    collapsed, trailing sentence punctuation stripped; every other symbol and the letters and
    digits of every script are kept. ``"ACME Corp."`` and ``"Acme Corp"`` share a key;
    ``"C++"`` and ``"C#"`` do not. A name that is not blank never yields an empty key: when
    the rules would remove everything, the NFKC-casefolded stripped name is the key.

    Source: DESIGN.md §4; seed 000 §3 ("Display names and identity keys").
    """
    base = unicodedata.normalize("NFKC", name).casefold()
    key = base.translate(_DROP)
    key = _SPACE_LIKE.sub(" ", key).strip()
    key = _TRAILING_PUNCT.sub("", key).strip()
    if not key:
        key = " ".join(base.split())
    return key


def document_id(source_scope: str, relative_path: str) -> str:
    """Return a document's id: ``sha256(source_scope, relative_path)``.

    Args:
        source_scope: the root the document is indexed from (absolute directory by default).
        relative_path: the POSIX path relative to that root.
    """
    return sha256_text("document", source_scope, relative_path)


def text_unit_id(document_id_: str, start_char: int, text: str) -> str:
    """Return a text unit's id: ``sha256(document_id, start_char, text)``."""
    return sha256_text("text_unit", document_id_, str(start_char), text)


def entity_id(name: str) -> str:
    """Return an entity's id: ``sha256("entity:" + entity_key(name))``."""
    return sha256_text("entity:" + entity_key(name))


def relationship_id(source_name: str, target_name: str, rel_type: str) -> str:
    """Return a directed relationship's id from both endpoint keys and the type key."""
    return sha256_text(
        "relationship", entity_key(source_name), entity_key(target_name), entity_key(rel_type)
    )
