import numpy as np
import pytest
from tests.fakes import FakeTokenCounter

from unified_kg_rag.domain.answers.extractive import select_sentences
from unified_kg_rag.domain.ranking.budget import pack_sections
from unified_kg_rag.domain.text.embedding_input import embedding_input

pytestmark = pytest.mark.unit


def test_sections_pack_in_order_and_the_first_overflow_is_truncated() -> None:
    counter = FakeTokenCounter()
    texts = ["a b c d", "e f g h i j k l", "m n"]
    packed = pack_sections(texts, 8, counter, header_tokens=[1, 1, 1], min_tail_tokens=2)
    assert [(p.index, p.text, p.truncated) for p in packed] == [
        (0, "a b c d", False),
        (1, "e f", True),
    ]
    assert sum(p.tokens for p in packed) <= 8


def test_a_tail_below_the_minimum_is_dropped_and_packing_stops() -> None:
    counter = FakeTokenCounter()
    packed = pack_sections(["a b c", "d e f g", "h"], 5, counter, min_tail_tokens=3)
    assert [p.index for p in packed] == [0]


def test_everything_fits() -> None:
    packed = pack_sections(["a", "b"], 100, FakeTokenCounter())
    assert [p.truncated for p in packed] == [False, False]


def _unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def test_select_sentences_ranks_by_cosine_and_skips_near_duplicates() -> None:
    q = _unit([1, 0, 0])
    s = np.stack([_unit([0, 1, 0]), _unit([1, 0.1, 0]), _unit([1, 0.1, 0.001]), _unit([1, 1, 0])])
    picked = select_sentences(q, s, 3)
    assert [i for i, _ in picked] == [1, 3, 0]
    assert picked[0][1] == pytest.approx(float(s[1] @ q))


def test_select_sentences_handles_empty_input_and_min_score() -> None:
    assert select_sentences(_unit([1, 0]), np.zeros((0, 2), dtype=np.float32), 3) == []
    s = np.stack([_unit([1, 0]), _unit([-1, 0.1])])
    assert [i for i, _ in select_sentences(_unit([1, 0]), s, 5, min_score=0.0)] == [0]


@pytest.mark.parametrize(
    ("text", "title", "expected"),
    [
        ("# Ada\n\nBody", "Ada", "Ada\n\nBody"),
        ("Middle part", "Ada Lovelace", "Ada Lovelace\nMiddle part"),
        ("ada lovelace was", "Ada  Lovelace", "ada lovelace was"),
        ("## Section\ntext", None, "Section\ntext"),
        ("x #not a heading", "", "x #not a heading"),
    ],
)
def test_embedding_input(text: str, title: str | None, expected: str) -> None:
    assert embedding_input(text, title) == expected


def test_term_coverage_weights_rare_terms_most() -> None:
    from unified_kg_rag.domain.answers.extractive import term_coverage

    sentences = [{"engine", "note", "bernoulli"}, {"engine", "steam"}, {"engine"}]
    cov = term_coverage(["engine", "bernoulli"], sentences)
    assert cov[0] == pytest.approx(1.0)
    assert cov[2] < 0.5 and cov[1] == cov[2]
    assert term_coverage([], sentences) == [0.0, 0.0, 0.0]


def test_boosts_can_reorder_sentences() -> None:
    q = _unit([1, 0, 0])
    s = np.stack([_unit([1, 0.2, 0]), _unit([1, 0.9, 0])])
    assert [i for i, _ in select_sentences(q, s, 2)] == [0, 1]
    assert [i for i, _ in select_sentences(q, s, 2, boosts=[0.0, 0.5])] == [1, 0]


def test_min_relative_drops_weak_sentences() -> None:
    q = _unit([1, 0, 0])
    s = np.stack([_unit([1, 0.1, 0]), _unit([0.3, 1, 0]), _unit([0.2, 0, 1])])
    assert [i for i, _ in select_sentences(q, s, 3)] == [0, 1, 2]
    assert [i for i, _ in select_sentences(q, s, 3, min_relative=0.6)] == [0]


def test_cited_numbers() -> None:
    from unified_kg_rag.domain.answers.citations import check_citations
    from unified_kg_rag.domain.models import Source

    def docs(*ns: int) -> list[Source]:
        return [Source(n=n, kind="text_unit", id=f"u{n}", text="t") for n in ns]

    answer = "A [1]. B [2][4]. C [3, 5]. D [6-8]. Stray [99] and [x]."
    assert check_citations(answer, docs(*range(1, 9))).cited == (1, 2, 3, 4, 5, 6, 7, 8)
    assert check_citations(answer, docs(2, 99)).cited == (2, 99)
    assert check_citations("no citations", docs(1)).cited == ()
    assert check_citations("[1-99999999]", docs(5)).cited == (5,)
