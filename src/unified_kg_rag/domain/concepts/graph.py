"""The LLM-free concept graph of methodology ``lazy``: concepts, unit links, co-occurrence.

Concepts are keyphrases of the text units (YAKE; see ``domain.concepts.text``) plus the units'
titles. Every unit is linked to every concept it *contains*, not only to those extracted from
it; this doubles the links and is what makes the graph useful for retrieval (issue 5, "What a
quick prototype already showed"). Concepts found in too few or too many units are dropped;
two concepts are linked by the number of units they share. The graph is a pure value, built
in one call and serialised without pickle. The idea follows LazyGraphRAG (Microsoft Research
blog, *LazyGraphRAG: Setting a new standard for quality and cost*, 2024: noun-phrase concepts
and their co-occurrence in place of LLM-extracted entities).

Not here: keyphrase extraction itself (``domain.concepts.text``), PPR (``domain.ranking.ppr``),
communities, storage, or running off the event loop (callers use ``asyncio.to_thread``).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import regex
from numpy.typing import NDArray

from unified_kg_rag.domain.concepts.cooccurrence import cooccurrence_edges
from unified_kg_rag.domain.concepts.text import (
    concept_key,
    detect_language,
    is_cjk_key,
    keyphrases,
    text_clauses,
)
from unified_kg_rag.util.errors import ConfigurationError, StoreSchemaError
from unified_kg_rag.util.hashing import sha256_text

logger = logging.getLogger(__name__)

__all__ = [
    "ConceptGraph",
    "ConceptVocabulary",
    "build_concept_graph",
    "concept_id",
    "concept_key",
    "detect_language",
    "keyphrases",
]

_FORMAT = "ukr-concept-graph"
_VERSION = 1
_MAX_MATCH_WORDS = 8
_CJK_RUN = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}ー々〆]+")


def concept_id(key: str) -> str:
    """Return a concept's id: ``sha256_text("concept", key)`` of its concept key."""
    return sha256_text("concept", key)


class ConceptVocabulary:
    """A set of concept keys that finds the ones a text contains.

    Word concepts match runs of :func:`~unified_kg_rag.domain.concept_text.text_clauses`
    tokens (up to 8 words; longer keys, such as long titles, are only linked to the units
    they were extracted from). Chinese and Japanese concepts (all Han/Kana) match as
    substrings of the text's Han/Kana runs, as those scripts have no spaces.
    """

    def __init__(self, keys: Iterable[str]) -> None:
        """Index ``keys`` (concept keys; empty strings are ignored)."""
        self._keys = frozenset(k for k in keys if k)
        words: dict[str, set[int]] = {}
        cjk: dict[str, set[int]] = {}
        for key in self._keys:
            if is_cjk_key(key):
                cjk.setdefault(key[0], set()).add(len(key))
            else:
                tokens = key.split(" ")
                if len(tokens) <= _MAX_MATCH_WORDS:
                    words.setdefault(tokens[0], set()).add(len(tokens))
        self._words = {t: tuple(sorted(ns, reverse=True)) for t, ns in words.items()}
        self._cjk = {c: tuple(sorted(ns, reverse=True)) for c, ns in cjk.items()}

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def find(self, text: str) -> list[tuple[str, int]]:
        """Return the concepts ``text`` contains, each once, in order of first occurrence.

        Returns:
            ``(key, size)`` pairs; ``size`` is the number of words, or for a Han/Kana key
            its characters divided by two, rounded up (a Chinese word averages about two
            characters). At one position, longer matches come first.
        """
        found: dict[str, int] = {}
        for tokens in text_clauses(text):
            for i, token in enumerate(tokens):
                for n in self._words.get(token, ()):
                    if i + n <= len(tokens):
                        key = token if n == 1 else " ".join(tokens[i : i + n])
                        if key in self._keys:
                            found.setdefault(key, n)
                if self._cjk:
                    for run in _CJK_RUN.findall(token):
                        self._find_cjk(run, found)
        return list(found.items())

    def _find_cjk(self, run: str, found: dict[str, int]) -> None:
        for i, char in enumerate(run):
            for n in self._cjk.get(char, ()):
                if i + n <= len(run) and run[i : i + n] in self._keys:
                    found.setdefault(run[i : i + n], (n + 1) // 2)


@dataclass(frozen=True, eq=False)
class ConceptGraph:
    """Concepts, their links to text units and their co-occurrence: an immutable value.

    Attributes:
        concepts: concept keys, sorted; a concept's index is its position here.
        concept_ids: ``concept_id(key)`` of each concept, parallel to ``concepts``.
        df: the number of units linked to each concept, parallel to ``concepts``.
        unit_ids: text unit ids, sorted; a unit's index is its position here.
        unit_index: int32 ``[n_links]``, the unit of each link (sorted by unit, then concept).
        concept_index: int32 ``[n_links]``, the concept of each link.
        weight: float32 ``[n_links]``, ``1 / ln(1 + df)`` of the link's concept.
        co_source: int32 ``[n_edges]``, the lower concept index of each co-occurrence edge.
        co_target: int32 ``[n_edges]``, the higher concept index (edges sorted by both).
        co_weight: float32 ``[n_edges]``, the number of units the two concepts share.
        max_ngram: the longest keyphrase, in words, asked of the extractor at build time.
    """

    concepts: tuple[str, ...]
    concept_ids: tuple[str, ...]
    df: tuple[int, ...]
    unit_ids: tuple[str, ...]
    unit_index: NDArray[np.int32]
    concept_index: NDArray[np.int32]
    weight: NDArray[np.float32]
    co_source: NDArray[np.int32]
    co_target: NDArray[np.int32]
    co_weight: NDArray[np.float32]
    max_ngram: int = 3

    def __post_init__(self) -> None:
        """Freeze the arrays (as read-only copies of the given dtype) and check lengths."""
        for name, dtype in (
            ("unit_index", np.int32),
            ("concept_index", np.int32),
            ("weight", np.float32),
            ("co_source", np.int32),
            ("co_target", np.int32),
            ("co_weight", np.float32),
        ):
            array = np.array(getattr(self, name), dtype=dtype).reshape(-1)
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        n = len(self.concepts)
        if not (len(self.concept_ids) == len(self.df) == n):
            raise ValueError("concepts, concept_ids and df must have the same length")
        if not (len(self.unit_index) == len(self.concept_index) == len(self.weight)):
            raise ValueError("unit_index, concept_index and weight must have the same length")
        if not (len(self.co_source) == len(self.co_target) == len(self.co_weight)):
            raise ValueError("co_source, co_target and co_weight must have the same length")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConceptGraph):
            return NotImplemented
        return (
            self.concepts == other.concepts
            and self.concept_ids == other.concept_ids
            and self.df == other.df
            and self.unit_ids == other.unit_ids
            and self.max_ngram == other.max_ngram
            and all(
                np.array_equal(getattr(self, name), getattr(other, name))
                for name in _ARRAYS
            )
        )

    @property
    def cooccurrence(self) -> tuple[tuple[int, int, float], ...]:
        """The co-occurrence edges as ``(lower index, higher index, shared units)`` tuples."""
        return tuple(
            zip(self.co_source.tolist(), self.co_target.tolist(), self.co_weight.tolist(),
                strict=True)
        )

    @cached_property
    def vocabulary(self) -> ConceptVocabulary:
        """The concepts as a :class:`ConceptVocabulary` (built on first use)."""
        return ConceptVocabulary(self.concepts)

    @cached_property
    def _index_of(self) -> dict[str, int]:
        return {key: i for i, key in enumerate(self.concepts)}

    def match_query(self, question: str) -> list[tuple[int, int]]:
        """Return the concepts a question contains, tokenised as the units were.

        Returns:
            ``(concept index, size)`` pairs in order of first occurrence, each concept once;
            ``size`` is the n-gram length in words (Han/Kana: characters / 2, rounded up).
        """
        index_of = self._index_of
        return [(index_of[key], size) for key, size in self.vocabulary.find(question)]

    def to_bytes(self) -> bytes:
        """Serialise to a compressed ``.npz`` (no pickle) holding the arrays and a JSON header.

        The header records the format name and version (1), ``max_ngram``, the concept keys
        and the unit ids; concept ids are recomputed from the keys on load.
        """
        header = {
            "format": _FORMAT,
            "version": _VERSION,
            "max_ngram": self.max_ngram,
            "concepts": list(self.concepts),
            "unit_ids": list(self.unit_ids),
        }
        raw = json.dumps(header, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        buffer = io.BytesIO()
        np.savez_compressed(
            buffer,
            header=np.frombuffer(raw, dtype=np.uint8),
            df=np.asarray(self.df, dtype=np.int64),
            **{name: getattr(self, name) for name in _ARRAYS},
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> ConceptGraph:
        """Load a graph written by :meth:`to_bytes`.

        Raises:
            StoreSchemaError: ``data`` is not a concept graph, or was written by another
                format version.
        """
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                header = json.loads(npz["header"].tobytes().decode("ascii"))
                arrays = {name: npz[name] for name in _ARRAYS}
                df = tuple(int(x) for x in npz["df"])
        except (OSError, ValueError, KeyError, UnicodeDecodeError) as exc:
            raise StoreSchemaError(f"not a stored concept graph: {exc}") from exc
        if not isinstance(header, dict) or header.get("format") != _FORMAT:
            raise StoreSchemaError("not a stored concept graph: unknown format header")
        if header.get("version") != _VERSION:
            raise StoreSchemaError(
                f"concept graph format version {header.get('version')!r} is not supported "
                f"(this code reads version {_VERSION}); rebuild the index"
            )
        concepts = tuple(str(k) for k in header["concepts"])
        return cls(
            concepts=concepts,
            concept_ids=tuple(concept_id(k) for k in concepts),
            df=df,
            unit_ids=tuple(str(u) for u in header["unit_ids"]),
            max_ngram=int(header["max_ngram"]),
            **arrays,
        )


_ARRAYS = ("unit_index", "concept_index", "weight", "co_source", "co_target", "co_weight")


def _check(
    *, max_ngram: int, min_df: int, max_df: int | float, min_co: int, max_edges: int
) -> None:
    if max_ngram < 1:
        raise ConfigurationError("must be at least 1", field="max_ngram")
    if min_df < 1:
        raise ConfigurationError("must be at least 1", field="min_df")
    if isinstance(max_df, float) and not 0.0 < max_df <= 1.0:
        raise ConfigurationError("a float is a share of units, in (0, 1]", field="max_df")
    if min_co < 1:
        raise ConfigurationError("must be at least 1", field="min_cooccurrence")
    if max_edges < 0:
        raise ConfigurationError(
            "must not be negative", field="max_cooccurrence_edges_per_concept"
        )


def build_concept_graph(
    units: Sequence[tuple[str, str, str]],
    *,
    keyphrases_per_unit: int = 15,
    max_ngram: int = 3,
    include_titles: bool = True,
    min_df: int = 2,
    max_df: int | float = 30,
    link_by_containment: bool = True,
    min_cooccurrence: int = 2,
    max_cooccurrence_edges_per_concept: int = 50,
    language: str | None = None,
    unit_keyphrases: Sequence[Sequence[str]] | None = None,
) -> ConceptGraph:
    """Build the concept graph of a corpus of text units.

    1. Vocabulary: each unit's keyphrases (:func:`keyphrases`, ``keyphrases_per_unit`` of up
       to ``max_ngram`` words) plus, with ``include_titles``, each unit's title key.
    2. Links: a unit links to its own phrases and, with ``link_by_containment``, to every
       vocabulary phrase its text (and, with ``include_titles``, its title) contains
       (:class:`ConceptVocabulary`). Repeated unit ids are merged (union of links).
    3. Pruning: a concept is kept when its document frequency ``df`` (units linked) is in
       ``[min_df, max_df]``; an int ``max_df`` is a count, a float a share of the units.
       Each link weighs ``1 / ln(1 + df)``.
    4. Co-occurrence: two kept concepts sharing at least ``min_cooccurrence`` units are joined
       by an edge weighted by that count; an edge is kept only when it is among the
       ``max_cooccurrence_edges_per_concept`` strongest of *both* its concepts (ties by
       concept id), so no concept has more edges than that and the graph stays bounded.

    The result does not depend on the order of ``units``. Cost: one YAKE call per unit
    (about 5 ms for a 100-word passage), then linear in the corpus; no model is loaded.

    Args:
        units: ``(text_unit_id, text, title)`` triples; ``title`` may be ``""``.
        keyphrases_per_unit: YAKE's ``top`` per unit.
        max_ngram: the most words in an extracted keyphrase.
        include_titles: add titles to the vocabulary and match inside them.
        min_df: the fewest units a kept concept is linked to (at least 1).
        max_df: the most units a kept concept is linked to: a count, or a share in (0, 1].
        link_by_containment: link units to every phrase they contain, not only their own.
        min_cooccurrence: the fewest shared units for a co-occurrence edge (at least 1).
        max_cooccurrence_edges_per_concept: the cap on each concept's edges (0: no edges).
        language: the YAKE language of every unit; ``None`` guesses it per unit.
        unit_keyphrases: precomputed keyphrases, parallel to ``units`` (for example from a
            process pool); when given, no extraction runs and ``keyphrases_per_unit`` is unused.

    Raises:
        ConfigurationError: a parameter is out of range.
        ValueError: ``unit_keyphrases`` is not parallel to ``units``.
    """
    _check(max_ngram=max_ngram, min_df=min_df, max_df=max_df,
           min_co=min_cooccurrence, max_edges=max_cooccurrence_edges_per_concept)
    if unit_keyphrases is not None and len(unit_keyphrases) != len(units):
        raise ValueError("unit_keyphrases must have one entry per unit")
    links: dict[str, set[str]] = {}
    for i, (unit_id, text, title) in enumerate(units):
        if unit_keyphrases is not None:
            own = {k for k in (concept_key(p) for p in unit_keyphrases[i]) if k}
        else:
            own = set(keyphrases(text, max_ngram=max_ngram, top=keyphrases_per_unit,
                                 language=language))
        if include_titles and title and (title_key := concept_key(title)):
            own.add(title_key)
        links.setdefault(unit_id, set()).update(own)
    if link_by_containment:
        vocabulary = ConceptVocabulary(k for own in links.values() for k in own)
        for unit_id, text, title in units:
            contained = links[unit_id]
            contained.update(key for key, _ in vocabulary.find(text))
            if include_titles and title:
                contained.update(key for key, _ in vocabulary.find(title))
    return _assemble(links, min_df=min_df, max_df=max_df, max_ngram=max_ngram,
                     min_co=min_cooccurrence, max_edges=max_cooccurrence_edges_per_concept)


def _assemble(
    links: dict[str, set[str]],
    *,
    min_df: int,
    max_df: int | float,
    max_ngram: int,
    min_co: int,
    max_edges: int,
) -> ConceptGraph:
    unit_ids = tuple(sorted(links))
    limit = max_df * len(unit_ids) if isinstance(max_df, float) else max_df
    counts: dict[str, int] = {}
    for keys in links.values():
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    concepts = tuple(sorted(k for k, n in counts.items() if min_df <= n <= limit))
    index_of = {key: i for i, key in enumerate(concepts)}
    df = tuple(counts[k] for k in concepts)
    rows: list[int] = []
    cols: list[int] = []
    for u, unit_id in enumerate(unit_ids):
        kept = sorted(index_of[k] for k in links[unit_id] if k in index_of)
        rows.extend([u] * len(kept))
        cols.extend(kept)
    unit_index = np.asarray(rows, dtype=np.int32)
    concept_index = np.asarray(cols, dtype=np.int32)
    inv_log = (1.0 / np.log1p(np.asarray(df, dtype=np.float64))).astype(np.float32)
    ids = tuple(concept_id(k) for k in concepts)
    source, target, weight = cooccurrence_edges(
        unit_index, concept_index, ids, min_count=min_co, max_edges_per_node=max_edges
    )
    logger.debug("concept graph: %d units, %d concepts, %d links, %d co-occurrence edges",
                 len(unit_ids), len(concepts), len(rows), len(source))
    return ConceptGraph(
        concepts=concepts,
        concept_ids=ids,
        df=df,
        unit_ids=unit_ids,
        unit_index=unit_index,
        concept_index=concept_index,
        weight=inv_log[concept_index] if len(concepts) else np.zeros(0, np.float32),
        co_source=source,
        co_target=target,
        co_weight=weight,
        max_ngram=max_ngram,
    )

