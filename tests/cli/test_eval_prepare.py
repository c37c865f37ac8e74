"""`ukr eval prepare graphrag-bench | multihop-rag | jsonl`: small hand-made files in each
source's documented layout, the real GraphRAG-Bench novels when ../shared/data holds them, and
the one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified_kg_rag.cli.app import app
from unified_kg_rag.evaluation.dataset import load_dataset
from unified_kg_rag.evaluation.datasets.graphrag_bench import split_evidence

pytestmark = pytest.mark.integration

NOVELS = Path("/work/shared/data/graphrag_bench")
LOCATED = 1050
"""Evidence sentences of the ten novels located at coverage 0.75 (of 2,354)."""

GB_CORPUS = [
    {"corpus_name": "Novel-1", "context": "The miller of Trewint kept  a grey\nmare named Bess."},
    {"corpus_name": "Novel 2/B", "context": "Captain Rowe sailed the Swift to Falmouth in May."},
]
GB_QUESTIONS = [
    {"id": "n-1", "source": "Novel-1", "question": "What was the miller's mare called?",
     "answer": "Bess", "question_type": "Fact Retrieval",
     "evidence": "The miller of Trewint kept a grey mare named Bess.; The mare was grey.",
     "evidence_triple": "(miller, kept, Bess)"},
    {"id": "n-2", "source": "Novel 2/B", "question": "Where did Rowe sail; and when?",
     "answer": "To Falmouth, in May", "question_type": "Complex Reasoning",
     "evidence": "captain rowe sailed the swift to falmouth in may.", "evidence_triple": ""},
    {"id": "n-3", "source": "Novel-9", "question": "Summarise the voyage.",
     "answer": "A voyage.", "question_type": "Contextual Summarize", "evidence": ""},
]  # fmt: skip


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["eval", "prepare", *args])
    return result.exit_code, result.stdout, result.stderr


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def gb(tmp_path: Path) -> tuple[Path, Path]:
    return write(tmp_path / "c.json", GB_CORPUS), write(tmp_path / "q.json", GB_QUESTIONS)


# ------------------------------------------------------------------------- graphrag-bench


def test_graphrag_bench_writes_one_file_per_document_and_typed_rows(
    gb: tuple[Path, Path], tmp_path: Path
) -> None:
    code, out, err = invoke("graphrag-bench", str(gb[0]), str(gb[1]), "--out",
                            str(tmp_path / "o"), "--json")  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert sorted(p.name for p in (tmp_path / "o/corpus").iterdir()) == [
        "Novel-1.txt", "Novel_2_B.txt"]  # fmt: skip
    assert (tmp_path / "o/corpus/Novel-1.txt").read_text() == GB_CORPUS[0]["context"]
    items = load_dataset(tmp_path / "o/dataset.jsonl")
    assert [i.id for i in items] == ["n-1", "n-2", "n-3"]
    assert [i.category for i in items] == ["Fact Retrieval", "Complex Reasoning",
                                           "Contextual Summarize"]  # fmt: skip
    assert items[0].answers == ["Bess"] and items[0].supporting == ["Novel-1"]
    # evidence is the document's own text where a sentence was located; "The mare was grey."
    # has two content words, too few to locate
    assert items[0].evidence == ["The miller of Trewint kept  a grey\nmare named Bess."]
    assert items[0].metadata == {
        "source": "Novel-1", "evidence_triple": "(miller, kept, Bess)",
        "evidence_as_written": ["The miller of Trewint kept a grey mare named Bess.",
                                "The mare was grey."]}  # fmt: skip
    assert items[1].evidence == ["Captain Rowe sailed the Swift to Falmouth in May."]
    assert items[1].supporting == ["Novel_2_B"]
    assert items[2].supporting == [] and items[2].evidence == []
    assert report["evidence_snippets"] == 3 and report["evidence_located"] == 2
    assert report["questions_fully_located"] == 1 and report["unmatched_supporting"] == 1
    assert report["by_category"] == {"Complex Reasoning": 1, "Contextual Summarize": 1,
                                     "Fact Retrieval": 1}  # fmt: skip
    assert report["documents"] == 2 and report["questions"] == 3 and report["answerable"] == 3


def test_graphrag_bench_types_limit_force_and_the_next_line(
    gb: tuple[Path, Path], tmp_path: Path
) -> None:
    out_dir = str(tmp_path / "o")
    assert invoke("graphrag-bench", str(gb[0]), str(gb[1]), "--out", out_dir)[0] == 0
    code, _, err = invoke("graphrag-bench", str(gb[0]), str(gb[1]), "--out", out_dir)
    assert code == 2 and "--force" in err and "corpus" in err
    code, out, err = invoke("graphrag-bench", str(gb[0]), str(gb[1]), "--out", out_dir,
                            "--types", "Fact Retrieval, Contextual Summarize", "--limit", "1",
                            "--force")  # fmt: skip
    assert code == 0, err
    assert [i.id for i in load_dataset(tmp_path / "o/dataset.jsonl")] == ["n-1"]
    assert "Left out 2 questions" in out
    assert f"Next: ukr index {out_dir}/corpus && ukr eval {out_dir}/dataset.jsonl" in out
    code, _, err = invoke("graphrag-bench", str(gb[0]), str(gb[1]), "--out", out_dir,
                          "--types", "Facts", "--force")  # fmt: skip
    assert code == 2 and "--types" in err and "'Facts'" in err and "Fact Retrieval" in err


def test_split_evidence_keeps_a_semicolon_inside_a_sentence() -> None:
    assert split_evidence("He came; she left.; They met 'at noon'.; ") == [
        "He came; she left.", "They met 'at noon'."]  # fmt: skip
    assert split_evidence(["A.", " ", "B."]) == ["A.", "B."]
    assert split_evidence(None) == []


@pytest.mark.parametrize(
    ("corpus", "questions", "expected"),
    [
        ("missing.json", GB_QUESTIONS, "missing.json: cannot read"),
        ("{not json", GB_QUESTIONS, "c.json: not a JSON file"),
        ({"corpus_name": "x"}, GB_QUESTIONS, "c.json: expected a list of {corpus_name, context}"),
        ([{"corpus_name": "x"}], GB_QUESTIONS, "c.json[0].context: missing"),
        (GB_CORPUS, [{"source": "Novel-1", "answer": "a"}], "q.json[0].question: missing"),
        (GB_CORPUS, [GB_QUESTIONS[0], {**GB_QUESTIONS[1], "answer": 3}],
         "q.json[1].answer: not a string (int)"),
    ],
)  # fmt: skip
def test_graphrag_bench_bad_input_is_one_line_naming_file_and_field(
    tmp_path: Path, corpus: object, questions: object, expected: str
) -> None:
    c = tmp_path / "c.json"
    if isinstance(corpus, str) and corpus.startswith("{"):
        c.write_text(corpus, encoding="utf-8")
    elif isinstance(corpus, str):
        c = tmp_path / corpus
    else:
        write(c, corpus)
    q = write(tmp_path / "q.json", questions)
    code, _, err = invoke("graphrag-bench", str(c), str(q), "--out", str(tmp_path / "o"))
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(not NOVELS.is_dir(), reason="needs /work/shared/data/graphrag_bench")
def test_graphrag_bench_on_the_real_novels(tmp_path: Path) -> None:
    code, out, err = invoke("graphrag-bench", str(NOVELS / "novel.json"),
                            str(NOVELS / "novel_questions.json"), "--out", str(tmp_path),
                            "--json")  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["documents"] == 10 and report["questions"] == 1015
    assert report["by_category"] == {"Complex Reasoning": 317, "Contextual Summarize": 170,
                                     "Creative Generation": 32, "Fact Retrieval": 496}  # fmt: skip
    # the evidence sentences are restatements: located by content-word coverage
    assert report["evidence_snippets"] == 2354 and report["evidence_located"] == LOCATED
    assert report["unmatched_supporting"] == 0
    first = load_dataset(tmp_path / "dataset.jsonl")[0]
    assert first.supporting == ["Novel-44557"] and first.answers == ["Cornish heath"]
    # as written, only 3 of them occur verbatim (whitespace and case normalised)
    code, out, err = invoke("graphrag-bench", str(NOVELS / "novel.json"),
                            str(NOVELS / "novel_questions.json"), "--out", str(tmp_path),
                            "--json", "--force", "--min-coverage", "0")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["evidence_located"] == 3
    code, out, err = invoke("graphrag-bench", str(NOVELS / "novel.json"),
                            str(NOVELS / "novel_questions.json"), "--out", str(tmp_path),
                            "--json", "--force", "--located-only", "--types",
                            "Fact Retrieval,Complex Reasoning")  # fmt: skip
    assert code == 0, err
    kept = load_dataset(tmp_path / "dataset.jsonl")
    assert len(kept) == 514 and all(item.evidence for item in kept)


# --------------------------------------------------------------------------- multihop-rag

ARTICLES = [
    {"title": "Chipmaker beats forecasts", "author": "A. Writer", "source": "Tech Daily",
     "published_at": "2023-10-01T09:00:00+00:00", "category": "technology",
     "url": "https://example.org/chips", "body": "The chipmaker reported record sales."},
    {"title": "League final ends in a draw", "author": "B. Writer", "source": "Sport Wire",
     "published_at": "2023-10-02T09:00:00+00:00", "category": "sports",
     "url": "https://example.org/final", "body": "The final ended 1-1 after extra time."},
]
QUERIES = [
    {"query": "Did the chipmaker do well, and how did the final end?",
     "answer": "Yes", "question_type": "inference_query",
     "evidence_list": [
         {"title": "Chipmaker beats forecasts", "author": "A. Writer",
          "url": "https://example.org/chips", "source": "Tech Daily", "category": "technology",
          "published_at": "2023-10-01T09:00:00+00:00", "fact": "record sales"},
         {"title": "League Final ends in a draw", "author": "B. Writer", "url": "",
          "source": "Sport Wire", "category": "sports",
          "published_at": "2023-10-02T09:00:00+00:00", "fact": "ended 1-1"},
         {"title": "Not in the corpus", "url": "https://example.org/gone", "fact": "gone"},
     ]},
    {"query": "Who won the 2031 cup?", "answer": "Insufficient information.",
     "question_type": "null_query", "evidence_list": []},
]  # fmt: skip


def test_multihop_rag_writes_articles_and_marks_null_queries_unanswerable(tmp_path: Path) -> None:
    c, q = write(tmp_path / "c.json", ARTICLES), write(tmp_path / "q.json", QUERIES)
    code, out, err = invoke("multihop-rag", str(c), str(q), "--out", str(tmp_path / "o"),
                            "--json")  # fmt: skip
    assert code == 0, err
    assert (tmp_path / "o/corpus/00001.md").read_text() == (
        "# League final ends in a draw\n\nThe final ended 1-1 after extra time.\n")  # fmt: skip
    items = load_dataset(tmp_path / "o/dataset.jsonl")
    assert items[0].supporting == ["00000", "00001"]  # by URL, then by title (case folded)
    assert items[0].evidence == ["record sales", "ended 1-1", "gone"]
    assert items[0].answers == ["Yes"] and items[0].answerable
    assert items[0].category == "inference_query" and items[0].id == "1"
    assert items[1].answerable is False and items[1].answers == []
    report = json.loads(out)
    assert report["unmatched_supporting"] == 1 and report["unanswerable"] == 1
    assert report["by_category"] == {"inference_query": 1, "null_query": 1}
    assert report["documents"] == 2 and report["evidence_snippets"] == 3


def test_multihop_rag_bad_evidence_list_names_the_query(tmp_path: Path) -> None:
    c = write(tmp_path / "c.json", ARTICLES)
    q = write(tmp_path / "q.json", [{"query": "x", "evidence_list": "nope"}])
    code, _, err = invoke("multihop-rag", str(c), str(q), "--out", str(tmp_path / "o"))
    assert code == 2 and "q.json[0].evidence_list: expected a list of objects" in err


# ---------------------------------------------------------------------------------- jsonl


def test_jsonl_maps_fields_listifies_answers_and_keeps_the_rest(tmp_path: Path) -> None:
    src = tmp_path / "mine.jsonl"
    src.write_text(
        '{"qid": 7, "query": "Who?", "gold": {"text": "Ada"}, "kind": "who", "src": "a.md"}\n'
        "\n"
        '{"query": "Why?", "kind": "why", "answerable": false, "note": "n"}\n',
        encoding="utf-8",
    )
    out = tmp_path / "d" / "dataset.jsonl"
    code, stdout, err = invoke("jsonl", str(src), "--out", str(out), "--json", "--map",
                               "id=qid, question=query,answers=gold.text,category=kind,"
                               "supporting=src")  # fmt: skip
    assert code == 0, err
    items = load_dataset(out)
    assert [(i.id, i.question, i.answers, i.category) for i in items] == [
        ("7", "Who?", ["Ada"], "who"), ("3", "Why?", [], "why")]  # fmt: skip
    assert items[0].supporting == ["a.md"] and items[0].metadata == {}
    assert items[1].metadata == {"note": "n"} and items[1].answerable is False
    report = json.loads(stdout)
    assert report["by_category"] == {"who": 1, "why": 1}
    assert report["answerable"] == 1 and report["unanswerable"] == 1
    code, _, err = invoke("jsonl", str(src), "--out", str(out), "--map", "question=query")
    assert code == 2 and "exists" in err and "--force" in err


@pytest.mark.parametrize(
    ("lines", "field_map", "expected"),
    [
        ('{"q": "x"}\n', "", "in.jsonl:1: question: Field required; map it with --map"),
        ('{"q": "x"}\n{"q": "y", "a": 5}\n', "question=q,answers=a",
         "in.jsonl:2: answers (input field 'a'): Input should be a valid list"),
        ('{"q": "x"}\n[1]\n', "question=q", "in.jsonl:2: not a JSON object"),
        ('{"q": "x"\n', "question=q", "in.jsonl:1: not JSON"),
        ('{"q": "x"}\n', "question", "--map: expected FIELD=INPUT_FIELD, got 'question'"),
        ('{"q": "x"}\n', "query=q", "--map: 'query' is no dataset field"),
        ("\n", "", "in.jsonl: no questions in the file"),
    ],
)  # fmt: skip
def test_jsonl_errors_are_one_line_naming_file_line_and_field(
    tmp_path: Path, lines: str, field_map: str, expected: str
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(lines, encoding="utf-8")
    args = ["jsonl", str(src), "--out", str(tmp_path / "out.jsonl")]
    code, _, err = invoke(*args, *(["--map", field_map] if field_map else []))
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out.jsonl").exists()
