"""Concept text analysis: language guess, concept keys, keyphrases and phrase matching.

The text side of the LLM-free ``lazy`` concept graph (issue 5). A concept is a short phrase,
identified by its *concept key*: the phrase normalised by :func:`~unified_kg_rag.domain.
identity.entity_key` and then split into word tokens with edge punctuation stripped (and, for
Korean, common particles removed from each word). The same tokenisation runs over text units
and questions, so a phrase matches wherever its tokens occur in a row.

Keyphrases come from YAKE (Campos et al., *YAKE! Keyword extraction from single documents
using multiple local features*, Information Sciences 509, 2020; the ``yake`` package, imported
at first use). Chinese and Japanese are written without spaces, where YAKE sees whole
sentences as words; for them a stop-character segmentation is used instead (see
:func:`cjk_keyphrases`).

Not here: building the graph (``domain.concept_graph``), storage, embeddings.
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from collections import Counter
from typing import Any

import regex

from unified_kg_rag.domain.identity import entity_key

logger = logging.getLogger(__name__)

__all__ = [
    "cjk_keyphrases",
    "concept_key",
    "detect_language",
    "is_cjk_key",
    "keyphrases",
    "text_clauses",
]

_CJK_CHARS = r"\p{Han}\p{Hiragana}\p{Katakana}ー々〆"
_CJK_ONLY = regex.compile(rf"^[{_CJK_CHARS}]+$")
_CJK_RUN = regex.compile(rf"[{_CJK_CHARS}]+")
_HANGUL_ONLY = regex.compile(r"^\p{Hangul}+$")
_POSSESSIVE = regex.compile(r"(?<=[\p{L}\p{N}])['’]s\b")
# Clause boundaries: no concept spans them. A full stop after a lone letter ("U.S.", "J. R.")
# is an abbreviation, not a boundary. Commas are not boundaries: entity_key drops them, so a
# title such as "Paris, Texas" is found in "... in Paris, Texas ...".
_CLAUSE_BREAK = regex.compile(
    r"[;:!?()\[\]{}\"“”«»「」『』【】〈〉《》。；：！？（）]|(?<!(?:^|[^\p{L}])\p{L})\.(?=\s|$)"
)
_EDGE_HEAD = regex.compile(r"^[^\p{L}\p{M}\p{N}\p{S}]+")
_EDGE_TAIL = regex.compile(r"[^\p{L}\p{M}\p{N}\p{S}#]+$")
_HAS_WORD_CHAR = regex.compile(r"[\p{L}\p{N}]")

# Korean case and topic particles, longest first; stripped only when two syllables remain.
_KO_PARTICLES = (
    "에서는", "으로는", "에게서", "으로서", "으로써", "입니다",
    "에서", "에게", "으로", "까지", "부터", "에는", "이다", "처럼",
    "은", "는", "이", "가", "을", "를", "에", "의", "와", "과", "도", "로", "만",
)  # fmt: skip

# Chinese function characters that split a run of Han characters into candidate words.
_ZH_STOP = frozenset(
    "的了是在与及或也就而被把从之其这那个们"
    "我你他她它没很还又等着过吗呢吧啊但此有每即"
)
_CJK_MAX_CHARS = 8

# A few frequent, distinctive function words per Latin-script language YAKE has a list for.
_LATIN_STOPWORDS: dict[str, frozenset[str]] = {
    lang: frozenset(words.split())
    for lang, words in {
        "en": "the a an and of to is was in on at that with for it as by this from which his",
        "de": "der die das und ist nicht mit ein eine den dem auf für sich von zu im wird dass",
        "fr": "le la les et est des une dans du pour que qui pas sur au avec il ce sont",
        "es": "el la los las y es del una en por que con para se al fue como su",
        "it": "il di che e la gli della una per non sono con del nel alla è anche",
        "pt": "o os as e de do da dos uma não com para que em é foi na no ao",
        "nl": "de het een en van is dat niet met op voor zijn ook aan wordt bij",
        "sv": "och att det som är en på för med av inte till den var har",
        "da": "og at det som er en på for med af ikke til den var har jeg",
        "no": "og at det som er en på for med av ikke til den var har jeg ei",
        "fi": "ja on ei se että oli hän mutta kun myös tai ovat joka sen niin",
        "pl": "i w nie się na jest że do to z jak od po ale przez dla",
        "cz": "a je se na v že to s z do jako ale jsou by pro není",
        "ro": "și de în la cu este nu o pe din care că mai sunt fost",
        "hu": "a az és hogy nem is egy van meg de csak volt már mint",
        "tr": "ve bir bu da de için ile olarak çok daha ne gibi olan mi",
        "id": "yang dan di ini itu dengan untuk dari dalam tidak adalah ke pada akan",
    }.items()
}
_SCRIPTS = (
    ("ko", regex.compile(r"\p{Hangul}")),
    ("ja", regex.compile(r"[\p{Hiragana}\p{Katakana}]")),
    ("zh", regex.compile(r"\p{Han}")),
    ("cyrillic", regex.compile(r"\p{Cyrillic}")),
    ("el", regex.compile(r"\p{Greek}")),
    ("arabic", regex.compile(r"\p{Arabic}")),
    ("hy", regex.compile(r"\p{Armenian}")),
    ("hi", regex.compile(r"\p{Devanagari}")),
)
_LETTER = regex.compile(r"\p{L}")
_WORD = regex.compile(r"[\p{L}\p{M}]+")
_SAMPLE_CHARS = 3000

_local = threading.local()


def detect_language(text: str) -> str:
    """Guess the YAKE language code of ``text`` from its script and its stopwords.

    Scripts decide first: Hangul ``ko``; Kana ``ja``; Han without Kana ``zh``; Cyrillic
    ``uk`` (with і/ї/є/ґ), ``bg`` (with ъ and no ы/э) or ``ru``; Greek ``el``; Arabic script
    ``fa`` (with پ/چ/ژ/گ) or ``ar``; Armenian ``hy``; Devanagari ``hi``. A script counts when
    it holds at least 30% of the first 3,000 characters' letters (Kana: 5%, as Japanese mixes
    Kana with Han). Latin text gets the language whose frequent function words occur most
    often (``en``, ``de``, ``fr``, ``es``, ``it``, ``pt``, ``nl``, ``sv``, ``da``, ``no``,
    ``fi``, ``pl``, ``cz``, ``ro``, ``hu``, ``tr``, ``id``; ``cz`` is YAKE's code for Czech).

    Returns:
        A two-letter YAKE language code; ``"en"`` when nothing decides.
    """
    sample = text[:_SAMPLE_CHARS]
    letters = len(_LETTER.findall(sample))
    if not letters:
        return "en"
    for name, pattern in _SCRIPTS:
        share = len(pattern.findall(sample)) / letters
        if share >= (0.05 if name == "ja" else 0.3):
            return _script_language(name, sample)
    counts = Counter(w.casefold() for w in _WORD.findall(sample))
    best, best_score = "en", 0
    for lang, words in _LATIN_STOPWORDS.items():
        score = sum(counts[w] for w in words)
        if score > best_score:
            best, best_score = lang, score
    return best


def _script_language(name: str, sample: str) -> str:
    if name == "cyrillic":
        if regex.search(r"[іїєґІЇЄҐ]", sample):
            return "uk"
        if "ъ" in sample and not regex.search(r"[ыэ]", sample):
            return "bg"
        return "ru"
    if name == "arabic":
        return "fa" if regex.search(r"[پچژگ]", sample) else "ar"
    return name


def _strip_particle(token: str) -> str:
    if len(token) < 3 or not _HANGUL_ONLY.match(token):
        return token
    for particle in _KO_PARTICLES:
        if token.endswith(particle) and len(token) - len(particle) >= 2:
            return token[: -len(particle)]
    return token


def _clause_tokens(clause: str) -> list[str]:
    tokens = []
    for raw in entity_key(_POSSESSIVE.sub("", clause)).split(" "):
        token = _EDGE_TAIL.sub("", _EDGE_HEAD.sub("", raw))
        if token:
            tokens.append(_strip_particle(token))
    return tokens


def concept_key(phrase: str) -> str:
    """Return the concept key of ``phrase``: its :func:`entity_key`, tokenised for matching.

    After ``entity_key`` (NFKC, casefold, quotes and commas dropped, dashes as spaces), an
    English possessive ``'s`` is removed, punctuation is stripped from both ends of each word
    (symbols such as ``+`` and a final ``#`` stay: ``c++``, ``c#``), and Korean case and topic
    particles are removed from words of Hangul (``서울특별시는`` → ``서울특별시``). The key is
    a fixed point of ``entity_key`` and of this function.

    Returns:
        The words joined by single spaces; ``""`` when nothing but punctuation is left.
    """
    return " ".join(_clause_tokens(phrase))


def text_clauses(text: str) -> list[list[str]]:
    """Return the concept-key tokens of ``text``, one list per clause.

    Clauses end at sentence and bracket punctuation (``. ; : ! ? ( ) [ ]``, quotes, CJK
    full stops); no concept is matched across a clause boundary. Each clause is tokenised as
    :func:`concept_key` tokenises a phrase, so ``" ".join`` of a run of tokens is a key.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    clauses = []
    for clause in _CLAUSE_BREAK.split(folded):
        tokens = _clause_tokens(clause) if clause.strip() else []
        if tokens:
            clauses.append(tokens)
    return clauses


def is_cjk_key(key: str) -> bool:
    """Whether ``key`` is all Han/Kana characters (matched by substring, not by words)."""
    return bool(_CJK_ONLY.match(key))


def cjk_keyphrases(text: str, *, top: int = 15, language: str = "zh") -> list[str]:
    """Return up to ``top`` concept candidates of Chinese or Japanese ``text``.

    Japanese: the runs of Kanji and Katakana between Hiragana (particles and inflections are
    written in Hiragana: ``東京都は日本の首都です`` → 東京都, 日本, 首都). Chinese: runs of Han
    characters split at frequent function characters (的, 是, 在, 和, 有, ...:
    ``北京有故宫和长城`` → 北京, 故宫, 长城). Segments of 2 to 8 characters are candidates;
    longer segments give their character bigrams and trigrams, kept only when they occur at
    least twice in ``text``. Candidates rank by occurrences in ``text`` (more first), then by
    length (longer first), then by first position.

    Returns:
        Concept keys, best first, without duplicates.
    """
    folded = unicodedata.normalize("NFKC", text)
    if language == "ja":
        pattern = r"[\p{Han}\p{Katakana}ー々〆]+"
        segments = regex.findall(pattern, folded)
    else:
        segments = [
            part
            for run in regex.findall(r"[\p{Han}々〆]+", folded)
            for part in regex.split("[" + "".join(sorted(_ZH_STOP)) + "]+", run)
        ]
    candidates: dict[str, bool] = {}
    for seg in segments:
        if 2 <= len(seg) <= _CJK_MAX_CHARS:
            candidates.setdefault(seg, True)
        elif len(seg) > _CJK_MAX_CHARS:
            for n in (3, 2):
                for i in range(len(seg) - n + 1):
                    candidates.setdefault(seg[i : i + n], False)
    scored = []
    for cand, whole in candidates.items():
        count = folded.count(cand)
        if whole or count >= 2:
            scored.append((-count, -len(cand), folded.find(cand), cand))
    scored.sort()
    return [cand for *_, cand in scored[:top]]


def _extractor(language: str, max_ngram: int, top: int) -> Any:
    cache: dict[tuple[str, int, int], Any] | None = getattr(_local, "extractors", None)
    if cache is None:
        cache = _local.extractors = {}
    key = (language, max_ngram, top)
    if key not in cache:
        import yake

        cache[key] = yake.KeywordExtractor(lan=language, n=max_ngram, top=top)
    return cache[key]


def keyphrases(
    text: str, *, max_ngram: int = 3, top: int = 15, language: str | None = None
) -> list[str]:
    """Return the keyphrases of ``text`` as concept keys, best first.

    YAKE with the language's stopword list (``language`` or :func:`detect_language`) extracts
    ``top`` phrases of up to ``max_ngram`` words; Chinese and Japanese use
    :func:`cjk_keyphrases`. Results go through :func:`concept_key`, and empty keys, keys
    without a letter or digit, and duplicates are dropped (so fewer than ``top`` may come
    back). One extractor per language and thread is kept, so calls from worker threads are
    safe. Never raises: an extractor failure is logged at DEBUG and gives ``[]``.

    Args:
        text: any text; empty, binary-looking or emoji-only text gives ``[]`` or few phrases.
        max_ngram: the most words in a phrase (YAKE ``n``).
        top: how many phrases YAKE returns before normalisation.
        language: a YAKE language code; ``None`` guesses it.

    Returns:
        Distinct, non-empty concept keys in YAKE's rank order.
    """
    try:
        if not text or not text.strip():
            return []
        lang = language or detect_language(text)
        if lang in ("zh", "ja"):
            raw = cjk_keyphrases(text, top=top, language=lang)
        else:
            raw = [kw for kw, _score in _extractor(lang, max_ngram, top).extract_keywords(text)]
    except Exception as exc:  # YAKE or segtok on odd input; a unit without concepts is fine
        logger.debug("keyphrase extraction failed: %s", exc)
        return []
    out: dict[str, None] = {}
    for phrase in raw:
        key = concept_key(str(phrase))
        if key and _HAS_WORD_CHAR.search(key):
            out.setdefault(key, None)
    return list(out)
