"""`ukr eval generate` (AutoQ-style questions and assertions, seed 000 §9.3) end to end: the
LLM and the embedding model are a real OpenAI-compatible server on 127.0.0.1 whose chat
replies are computed from the prompt (so they do not depend on which cluster came first);
plus the sampling pieces (text units, k-means, representative samples) on hand-made input."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.support.openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from unified_kg_rag.cli.app import app
from unified_kg_rag.evaluation.autoq_sampling import kmeans, read_units, representative_samples
from unified_kg_rag.evaluation.dataset import load_dataset

pytestmark = pytest.mark.integration

DOCS = {
    "owls.md": "Owls are nocturnal birds of prey. The barn owl hunts voles at night.",
    "bees.txt": "Honey bees live in colonies. A queen bee lays the eggs of the hive.",
    "sea/ships.md": "The clipper ship was a fast sailing vessel of the 19th century.",
    "notes.json": '{"not": "read"}',
    ".hidden.md": "Not read either.",
}
TOPICS = {  # a text in the unit -> (topic label, its local question)
    "Owls are": ("owls", "What do barn owls hunt?"),
    "Honey bees": ("bees", "Who lays the eggs of a bee hive?"),
    "clipper ship": ("ships", "What kind of vessel was the clipper?"),
}
GLOBAL = "How do the animals of the collection live?"


def model(body: dict[str, Any]) -> str:
    """A chat model that answers the three AutoQ prompts by reading them."""
    prompt = str(body["messages"][-1]["content"])
    if "belong to one topic" in prompt:
        label, question = next(v for k, v in TOPICS.items() if k in prompt)
        return json.dumps({"topic": label, "questions": [question]})
    if "collection as a whole" in prompt:
        topic = {label: int(n) for n, label in re.findall(r"^Topic (\d+) \((\w+)\):", prompt, re.M)}
        return "Here you are:\n```json\n" + json.dumps(
            {"questions": [{"question": GLOBAL, "topics": [topic["owls"], topic["bees"]]}]}
        ) + "\n```"  # fmt: skip
    number = {k: int(n) for n, text in re.findall(r"^\[(\d+)\] (.*)$", prompt, re.M)
              for k in TOPICS if k in text}  # fmt: skip
    if "Who lays the eggs" in prompt:
        return "Sorry, I cannot help with that."  # malformed: the question is dropped
    if "barn owls hunt" in prompt:
        return json.dumps({"assertions": [
            {"statement": "Barn owls hunt voles.", "sources": [number["Owls are"]]},
            {"statement": "Owls hunt by day.", "sources": [99]},  # unknown: dropped
        ]})  # fmt: skip
    if "clipper" in prompt:
        return json.dumps({"assertions": [
            {"statement": "The clipper was a fast sailing ship.",
             "sources": [str(number["clipper ship"])]}]})  # fmt: skip
    return json.dumps({"assertions": [
        {"statement": "Honey bees live in colonies.", "sources": [number["Honey bees"]]},
        {"statement": "Owls hunt at night, bees keep a hive.",
         "sources": [number["Owls are"], number["Honey bees"]]},
    ]})  # fmt: skip


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A `CliRunner` in an environment without the caller's ``UKR_`` variables."""
    for key in list(os.environ):
        if key.upper().startswith("UKR_"):
            monkeypatch.delenv(key)
    return CliRunner()


@pytest.fixture
def server(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> Any:
    srv = FakeOpenAIServer(reply=model, embedding_dimension=16).start()
    for key, value in {
        "UKR_LLM__KIND": "openai", "UKR_LLM__OPENAI__BASE_URL": srv.base_url,
        "UKR_LLM__OPENAI__API_KEY": "k", "UKR_LLM__MAX_RETRIES": "0", "UKR_LLM__CACHE": "false",
        "UKR_EMBEDDINGS__KIND": "openai", "UKR_EMBEDDINGS__OPENAI__BASE_URL": srv.base_url,
        "UKR_EMBEDDINGS__OPENAI__API_KEY": "k",
    }.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    yield srv
    srv.stop()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    for name, text in DOCS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def generate(runner: CliRunner, corpus: Path, out: Path, *extra: str) -> dict[str, Any]:
    result = runner.invoke(app, ["eval", "generate", str(corpus), "--out", str(out), "-C",
                                 str(corpus.parent), "--clusters", "3", "--per-class", "3",
                                 "--units-per-cluster", "1", "--json", *extra])  # fmt: skip
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_generate_writes_questions_assertions_units_and_report(
    server: FakeOpenAIServer, runner: CliRunner, corpus: Path, tmp_path: Path
) -> None:
    report = generate(runner, corpus, tmp_path / "out")
    by_q = {i.question: i for i in load_dataset(tmp_path / "out/dataset.jsonl")}
    assert set(by_q) == {"What do barn owls hunt?", "What kind of vessel was the clipper?", GLOBAL}
    owls = by_q["What do barn owls hunt?"]
    assert owls.category == "data_local" and owls.supporting == ["owls"]
    assert [(a.text, a.kind, a.sources) for a in owls.assertions] == [
        ("Barn owls hunt voles.", "positive", ["owls.md#0"])]  # fmt: skip
    ships = by_q["What kind of vessel was the clipper?"]
    assert ships.supporting == ["ships"] and ships.assertions[0].sources == ["sea/ships.md#0"]
    glob = by_q[GLOBAL]
    assert glob.id == "global-1" and glob.category == "data_global"
    assert [a.sources for a in glob.assertions] == [["bees.txt#0"], ["owls.md#0", "bees.txt#0"]]
    assert glob.supporting == ["bees", "owls"]  # the cited units' files, in citation order
    assert sorted(glob.metadata["source_units"]) == ["bees.txt#0", "owls.md#0"]
    assert all(i.evidence == [] and i.answers == [] for i in by_q.values())

    units = [json.loads(line) for line in (tmp_path / "out/text_units.jsonl").read_text().splitlines()]
    assert [(u["id"], u["file"], u["start"], u["end"]) for u in units] == [
        ("bees.txt#0", "bees.txt", 0, 67), ("owls.md#0", "owls.md", 0, 68),
        ("sea/ships.md#0", "sea/ships.md", 0, 63)]  # fmt: skip
    assert units[1]["text"] == DOCS["owls.md"]

    saved = json.loads((tmp_path / "out/generation_report.json").read_text())
    assert saved == report
    assert report["counts"] == {"data_local": 2, "data_global": 1}
    assert report["candidates"] == {"data_local": 3, "data_global": 1}
    assert report["units_total"] == 3 and report["units_sampled"] == 3
    assert report["clusters"] == 3 and report["cluster_sizes"] == [1, 1, 1]
    assert report["assertions"] == 4 and report["model"].startswith("openai:")
    # 3 local calls, 1 global call, 4 assertion calls (one per kept question)
    assert report["usage"]["calls"] == 8 and len(server.requests_to("/chat/completions")) == 8
    bees_id = next(d["item"] for d in report["dropped"] if "no JSON" in d["reason"])
    assert bees_id.startswith("local-")
    assert sorted((d["step"], d["reason"]) for d in report["dropped"]) == [
        ("assertions", "cites unknown unit ids"),
        ("assertions", "the reply holds no JSON object"),
    ]
    assert any(d["item"] == f"{owls.id} assertion 2" for d in report["dropped"])
    assert all(p in server.requests_to("/chat/completions")[0].body["messages"][-1]["content"]
               for p in ("English", "[1] "))  # fmt: skip


def test_same_replies_and_seed_write_the_same_files(
    server: FakeOpenAIServer, runner: CliRunner, corpus: Path, tmp_path: Path
) -> None:
    first = generate(runner, corpus, tmp_path / "a", "--seed", "7")
    second = generate(runner, corpus, tmp_path / "b", "--seed", "7")
    for name in ("dataset.jsonl", "text_units.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    for report in (first, second):
        for key in ("dataset", "text_units", "report_path", "usage"):
            report.pop(key)
    assert first == second and first["seed"] == 7


def test_no_assertions_max_units_and_classes(
    server: FakeOpenAIServer, runner: CliRunner, corpus: Path, tmp_path: Path
) -> None:
    report = generate(runner, corpus, tmp_path / "out", "--no-assertions", "--max-units", "2",
                      "--classes", "local", "--language", "Deutsch")  # fmt: skip
    assert report["units_sampled"] == 2 and report["units_total"] == 3
    assert report["counts"] == {"data_local": 2} and report["usage"]["calls"] == 2
    items = load_dataset(tmp_path / "out/dataset.jsonl")
    assert all(i.assertions == [] and i.category == "data_local" for i in items)
    assert all(len(i.supporting) == 1 for i in items)  # the source unit's file
    assert len((tmp_path / "out/text_units.jsonl").read_text().splitlines()) == 2
    prompts = [r.body["messages"][-1]["content"] for r in server.requests_to("/chat/completions")]
    assert all("in Deutsch" in p for p in prompts)
    again = runner.invoke(app, ["eval", "generate", str(corpus), "--out", str(tmp_path / "out"),
                                "-C", str(corpus.parent)])  # fmt: skip
    assert again.exit_code == 2 and "--force" in again.stderr
    again = runner.invoke(app, ["eval", "generate", str(corpus), "--out", str(tmp_path / "out"),
                                "-C", str(corpus.parent), "--force", "--clusters", "3",
                                "--no-assertions", "--classes", "global"])  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "Wrote 1 questions (data_global 1)" in again.stdout
    assert f"Next: ukr index {corpus} && ukr eval {tmp_path / 'out/dataset.jsonl'}" in again.stdout


def test_generate_refuses_without_an_llm_and_with_a_bad_class(
    runner: CliRunner, corpus: Path, tmp_path: Path
) -> None:
    args = ["eval", "generate", str(corpus), "--out", str(tmp_path / "o"), "-C", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "llm.kind" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = runner.invoke(app, [*args, "--classes", "local,linked"])
    assert result.exit_code == 2 and "--classes" in result.stderr and "'linked'" in result.stderr
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------ sampling


def test_read_units_packs_paragraphs_with_exact_offsets(tmp_path: Path) -> None:
    text = "\ufeff" + "\n\n".join(" ".join(f"w{p}x{i}" for i in range(12)) for p in range(3))
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    units = read_units(tmp_path, unit_tokens=25)
    body = text[1:]  # the byte-order mark is dropped
    assert [u.id for u in units] == ["a.txt#0", "a.txt#1"]
    assert all(body[u.start : u.end] == u.text for u in units)
    # 12 words a paragraph, 1 estimated token each ("w1x10": 5 characters rounds to 1): the
    # second paragraph ends at token 24 of 25, a paragraph break in the unit's last 30 %
    assert units[0].text.endswith("w1x11") and units[1].text.startswith("w2x0")
    assert units[1].end == len(body)


def test_kmeans_separates_two_groups_for_any_seed() -> None:
    x = np.array([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0], [0.14, 0.99], [0.98, 0.2]])
    for seed in range(5):
        labels, centroids = kmeans(x, 2, np.random.default_rng(seed))
        assert labels[0] == labels[1] == labels[4] != labels[2] == labels[3]
        np.testing.assert_allclose(centroids[labels[2]], [0.07, 0.995])


def test_representative_sample_starts_nearest_the_centroid() -> None:
    x = np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]])
    labels = np.array([0, 0, 0, 0, 1])
    centroids = np.array([x[:4].mean(axis=0), x[4]])
    samples = representative_samples(x, labels, centroids, per_cluster=3)
    # centroid (0.6, 0.6): units 1 and 2 are both 0.2 away, the first (unit 1) is taken;
    # then by cosine to unit 1: unit 2 (0.96), unit 0 (0.8); unit 3 (0.6) is left out
    assert [(s.number, s.size, s.units) for s in samples] == [(1, 4, [1, 2, 0]), (2, 1, [4])]
