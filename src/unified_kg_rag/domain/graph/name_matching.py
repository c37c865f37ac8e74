"""Name matching for entity resolution: the compact name key and the guarded fuzzy matcher.

`compact_name_key` folds names that differ only by a legal-form designator ("Acme Inc" /
"Acme", "(주)가나다" / "가나다") or by spaces next to Han, Hangul or Kana ("가나다 상사" /
"가나다상사"). `fuzzy_links` proposes similar compact keys for an opt-in fuzzy merge, never
linking names whose discriminator tokens differ ("World War I" / "World War II", "Apollo 11" /
"Apollo 13") or whose final Han/Hangul/Kana characters differ ("가나다연구원" / "가나다연구소").
`group_keys` applies both with a deterministic, type-aware union-find.

Not here: grouping statements and merging them (`domain.graph.resolution`). Source: seed 000 §4.2
("Entity merging", "Fuzzy matching is opt-in").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import regex

from unified_kg_rag.domain.identity import entity_key
from unified_kg_rag.util.errors import ConfigurationError

__all__ = [
    "KeyGrouping",
    "compact_key",
    "compact_name_key",
    "discriminator_tokens",
    "fuzzy_links",
    "group_keys",
    "majority",
]

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}ー々〆"
_CJK_SPACES = regex.compile(rf"\s+(?=[{_CJK}])|(?<=[{_CJK}])\s+")
_ENDS_CJK = regex.compile(rf"[{_CJK}]$")
# After NFKC (inside entity_key) ㈜ is "(주)" and ㈱ is "(株)"; the longest forms come first.
_CJK_DESIGNATORS = (
    "股份有限公司", "有限责任公司", "有限責任公司", "有限公司", "株式会社", "有限会社",
    "주식회사", "유한회사", "(주)", "(유)", "(株)", "(有)",
)  # fmt: skip
_CJK_DESIGNATOR = "|".join(regex.escape(d) for d in _CJK_DESIGNATORS)
_CJK_EDGE = regex.compile(rf"^(?:{_CJK_DESIGNATOR})\s*|\s*(?:{_CJK_DESIGNATOR})$")
_LATIN_DESIGNATORS = frozenset(
    {"inc", "ltd", "llc", "co", "corp", "corporation", "incorporated", "limited", "gmbh",
     "plc", "ag", "sa"}
)  # fmt: skip
_CONJUNCTIONS = frozenset({"&", "and"})
_TRAILING = ".,;"
_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
_ROMAN = frozenset(
    ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x",
     "xi", "xii", "xiii", "xiv", "xv", "xvi", "xvii", "xviii", "xix", "xx"]
)  # fmt: skip


def _strip_latin(key: str) -> str:
    """Drop trailing Latin designator tokens ("acme co. ltd" → "acme"), keeping one token."""
    tokens = key.split(" ")
    removed = False
    while len(tokens) > 1 and tokens[-1].replace(".", "").replace(",", "") in _LATIN_DESIGNATORS:
        tokens.pop()
        removed = True
        if len(tokens) > 1 and tokens[-1] in _CONJUNCTIONS:
            tokens.pop()
    return " ".join(tokens).rstrip(_TRAILING) if removed else key


def _strip_cjk(key: str) -> str:
    """Drop a leading or trailing CJK designator ("(주)가나다", "トヨタ株式会社")."""
    stripped = _CJK_EDGE.sub("", key, count=1).strip()
    return stripped or key


def compact_name_key(name: str) -> str:
    """Return the key under which two entity names are the same entity.

    `entity_key` of ``name``, then (repeatedly, while something is left) without a leading or
    trailing CJK legal-form designator (``(주)``/``㈜``, ``주식회사``, ``株式会社``, ``有限会社``,
    ``有限公司``, ``股份有限公司`` and a few kin) and without trailing Latin designator tokens
    (``inc``, ``ltd``, ``llc``, ``co``, ``corp``, ``corporation``, ``incorporated``,
    ``limited``, ``gmbh``, ``plc``, ``ag``, ``sa``, with or without dots: ``S.A.``,
    ``Co.,``; a ``&``/``and`` left before them goes too), and without the spaces next to
    Han/Hangul/Kana. A name made only of a designator keeps it, so a non-blank name never
    gets an empty key.

    Examples: "Acme Inc" and "ACME" share a key; "(주)가나다", "가나다 주식회사" and "가나다"
    do; "가나다 상사" and "가나다상사" do; "C++" and "C#" do not; "AT&T" keeps its "&".

    Source: seed 000 §4.2 ("Entity merging").
    """
    return compact_key(entity_key(name))


def compact_key(key: str) -> str:
    """Return `compact_name_key` of a name from its `entity_key` ``key`` (already computed).

    Never empty for a non-empty ``key``: what would be removed entirely is kept.
    """
    compact, previous = key, None
    while compact != previous:
        previous = compact
        compact = _strip_latin(_strip_cjk(compact))
    return _CJK_SPACES.sub("", compact) or key


def discriminator_tokens(key: str) -> tuple[str, ...]:
    """Return the sorted tokens of ``key`` that tell otherwise similar names apart.

    A token (a run of letters, digits and marks) discriminates when it holds a digit, is a
    single letter, or is a Roman numeral from I to XX: "world war ii" → ``("ii",)``,
    "apollo 13" → ``("13",)``. Fuzzy matching never links names whose tuples differ.
    """
    found = [
        tok
        for tok in _WORD.findall(key)
        if len(tok) == 1 or tok in _ROMAN or any(ch.isdigit() for ch in tok)
    ]
    return tuple(sorted(found))


def _sorted_tokens(key: str) -> str:
    return " ".join(sorted(key.split()))


def _blocks(sorted_forms: Sequence[str]) -> dict[str, list[int]]:
    """Candidate blocks of keys with their tokens sorted: first token, last token, prefix.

    Names that differ only in token order have one sorted form, so they share every block; a
    spelling variant shares at least one block unless it changes both the first and the last
    token and the first three characters.
    """
    blocks: dict[str, list[int]] = {}
    for i, form in enumerate(sorted_forms):
        tokens = form.split()
        for block in {"f:" + tokens[0], "l:" + tokens[-1], "p:" + form[:3]}:
            blocks.setdefault(block, []).append(i)
    return blocks


def fuzzy_links(keys: Sequence[str], *, threshold: float) -> Iterator[tuple[str, str]]:
    """Yield pairs of compact keys similar enough to merge, best first.

    Two keys are compared when, with their tokens sorted, they share the first token, the last
    token or the first three characters (blocking keeps the work far below all pairs: 19k
    names of MuSiQue take about 0.3 s); a pair links when rapidfuzz
    ``fuzz.token_sort_ratio`` reaches ``threshold``, its `discriminator_tokens` are equal, and,
    when either key ends in Han, Hangul or Kana, the final characters are equal.

    Args:
        keys: distinct compact name keys (`compact_name_key`), sorted.
        threshold: similarity 0-100.

    Yields:
        ``(a, b)`` with ``a < b``, by descending score then by the pair, so a union-find fed
        in this order is deterministic.

    Raises:
        ConfigurationError: rapidfuzz is not installed.

    Source: seed 000 §4.2; rapidfuzz ``token_sort_ratio`` (Indel similarity of the keys with
    their tokens sorted).
    """
    try:
        from rapidfuzz import fuzz, process  # optional: only fuzzy resolution needs it
    except ImportError as exc:
        raise ConfigurationError(
            "fuzzy entity resolution needs the rapidfuzz package (pip install rapidfuzz)"
        ) from exc

    sorted_forms = [_sorted_tokens(k) for k in keys]
    scored: dict[tuple[int, int], float] = {}
    for _, members in sorted(_blocks(sorted_forms).items()):
        if len(members) < 2:
            continue
        forms = [sorted_forms[i] for i in members]
        matrix = process.cdist(forms, forms, scorer=fuzz.ratio, score_cutoff=threshold)
        for a, b in zip(*(matrix >= threshold).nonzero(), strict=True):
            i, j = members[int(a)], members[int(b)]
            if i < j:
                scored[i, j] = float(matrix[a, b])
    candidates = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
    for (i, j), _score in candidates:
        a, b = keys[i], keys[j]
        if discriminator_tokens(a) != discriminator_tokens(b):
            continue
        if (_ENDS_CJK.search(a) or _ENDS_CJK.search(b)) and a[-1] != b[-1]:
            continue
        yield (a, b) if a < b else (b, a)


class _UnionFind:
    """Union-find over strings whose root is always the smallest member (deterministic)."""

    def __init__(self, items: Iterable[str]) -> None:
        self.parent = {item: item for item in items}

    def find(self, item: str) -> str:
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a: str, b: str) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[max(ra, rb)] = min(ra, rb)
        return True


def majority(counts: Mapping[str, int]) -> str:
    """Return the most frequent value of ``counts``; ties go to the smallest; "" when empty."""
    if len(counts) < 2:
        return next(iter(counts), "")
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


@dataclass(frozen=True)
class KeyGrouping:
    """Which entity keys name one entity.

    Attributes:
        root_of: every key → its group's root, the smallest key of the group.
        compact_merges: key groups joined because their compact keys are equal.
        fuzzy_merges: groups joined by the fuzzy matcher.
    """

    root_of: dict[str, str]
    compact_merges: int = 0
    fuzzy_merges: int = 0


def group_keys(
    keys: Iterable[str],
    *,
    types: Mapping[str, Mapping[str, int]] | None = None,
    fuzzy_threshold: float | None = None,
) -> KeyGrouping:
    """Group entity keys: equal `compact_key`, then (optionally) `fuzzy_links`.

    A union-find whose roots are the smallest keys, fed in sorted order, so the grouping does
    not depend on the order of ``keys``. A fuzzy link is skipped when the two groups' types
    (each group typed by the majority of its keys' votes) are both non-empty and differ, or
    when one of them already joined a different type: a group never holds two types.

    Args:
        keys: distinct `entity_key` values.
        types: key → type → statements (only fuzzy matching reads it).
        fuzzy_threshold: None (no fuzzy matching) or a 0-100 similarity threshold.

    Raises:
        ConfigurationError: fuzzy matching is on and rapidfuzz is not installed.

    Source: seed 000 §4.2 ("A type-aware union-find never groups two differently typed
    names").
    """
    ordered = sorted(keys)
    uf = _UnionFind(ordered)
    compact: dict[str, str] = {}  # compact key → first entity key
    compact_merges = fuzzy_merges = 0
    for key in ordered:
        ckey = compact_key(key)
        if ckey in compact:
            compact_merges += uf.union(compact[ckey], key)
        else:
            compact[ckey] = key
    if fuzzy_threshold is not None:
        votes: dict[str, dict[str, int]] = {}
        for key, counts in (types or {}).items():
            group = votes.setdefault(uf.find(key), {})
            for kind, n in counts.items():
                group[kind] = group.get(kind, 0) + n
        root_of_compact = {ckey: uf.find(key) for ckey, key in compact.items()}
        kinds = {root: {majority(votes.get(root, {}))} - {""} for root in root_of_compact.values()}
        for a, b in fuzzy_links(sorted(compact), threshold=fuzzy_threshold):
            ra, rb = uf.find(root_of_compact[a]), uf.find(root_of_compact[b])
            joined = kinds[ra] | kinds[rb]
            if ra != rb and len(joined) < 2:
                uf.union(ra, rb)
                kinds[uf.find(ra)] = joined
                fuzzy_merges += 1
    return KeyGrouping({key: uf.find(key) for key in ordered}, compact_merges, fuzzy_merges)
