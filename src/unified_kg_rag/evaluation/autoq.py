"""AutoQ-style question and assertion generation from a corpus with an LLM (seed 000 §9.3).

A native reimplementation of the approach of Microsoft's BenchmarkQED (AutoQ question
classes, AutoE-style assertions; code MIT, Copyright (c) Microsoft Corporation,
https://github.com/microsoft/benchmark-qed). The prompts (``domain/prompts/autoq_*.v1.md``)
are written here; none of BenchmarkQED's data is used. Two of its classes are built:

1. Sampling (`evaluation.autoq_sampling`): text units of about ``unit_tokens`` tokens, at
   most ``max_units`` drawn with the seed, embedded with the app's `Embedder`, seeded
   k-means into ``clusters`` groups, each shown through ``units_per_cluster`` representative
   units (the one nearest the centroid first), largest cluster first.
2. ``data_local``: one call per cluster asks for questions its sample answers (and a topic
   label). The kept questions are taken round-robin over the clusters, ``per_class`` in all.
3. ``data_global``: one call sees every cluster's label and local questions and asks for
   questions about the corpus as a whole, each naming the clusters it draws on (its source
   units are those clusters' samples; all clusters when it names none that exists).
4. Assertions (``--assertions``): one call per kept question lists up to
   ``max_assertions`` statements a good answer holds, each citing its source units by the
   numbers the prompt gave. An assertion citing a number the prompt did not give, or none,
   is dropped; a question left with no assertion is dropped.

A failed call (a `UkrError` from the model) or a reply without the expected JSON drops the
item it was for (a cluster's local questions, the global questions, one question) and is
counted in the report with the reason; the run goes on. Everything but the model's replies
(sampling, clustering, the prompts and their order, the selection) depends only on the seed
and the corpus, so the same replies give the same files.

Outputs in ``out_dir``: ``dataset.jsonl`` (`EvalItem` rows: ``category`` the class,
``supporting`` the stems of the files the assertions cite, ``assertions`` with ``sources`` =
unit ids), ``text_units.jsonl`` (the sampled units: id, file, start, end, text) and
``generation_report.json`` (`GenerationReport`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from unified_kg_rag.domain.llm.json_reply import parse_json_object
from unified_kg_rag.domain.llm.usage import usage_scope
from unified_kg_rag.domain.models import Message, TokenUsage
from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.domain.prompts.render import render_text
from unified_kg_rag.evaluation.autoq_sampling import (
    ClusterSample,
    TextUnitRecord,
    kmeans,
    read_units,
    representative_samples,
)
from unified_kg_rag.evaluation.dataset import Assertion, EvalItem
from unified_kg_rag.ports.models import ChatModel, Embedder
from unified_kg_rag.util.errors import UkrError, UsageError

__all__ = ["CLASSES", "AutoQSettings", "DroppedItem", "GenerationReport", "generate_questions"]

CLASSES = ("local", "global")
"""The question classes built (``data_local``, ``data_global``)."""

_CONCURRENCY = 4


class AutoQSettings(BaseModel):
    """The knobs of `generate_questions` (the ``ukr eval generate`` options)."""

    clusters: int = Field(default=8, ge=1)
    per_class: int = Field(default=5, ge=1)
    classes: tuple[str, ...] = CLASSES
    seed: int = 0
    assertions: bool = True
    max_units: int = Field(default=400, ge=1)
    unit_tokens: int = Field(default=400, ge=20)
    units_per_cluster: int = Field(default=5, ge=1)
    max_assertions: int = Field(default=5, ge=1)
    language: str = "English"

    @staticmethod
    def parse_classes(text: str) -> tuple[str, ...]:
        """Parse ``"local,global"``.

        Raises:
            UsageError: an unknown class, or none (``field`` is ``--classes``).
        """
        names = [c.strip() for c in text.split(",") if c.strip()]
        for name in names:
            if name not in CLASSES:
                raise UsageError(f"unknown class {name!r} (classes: {', '.join(CLASSES)})",
                                 field="--classes")  # fmt: skip
        if not names:
            raise UsageError("names no class", field="--classes")
        return tuple(dict.fromkeys(names))


class DroppedItem(BaseModel):
    """Something generation left out, and why (``step``: local, global, assertions)."""

    item: str
    step: str
    reason: str


class GenerationReport(BaseModel):
    """``generation_report.json``: what `generate_questions` did.

    Attributes:
        dataset / text_units / report_path: the files written.
        seed: the seed of sampling and clustering.
        model: the chat model's id; embedding_model: the embedder's.
        units_total: text units in the corpus; units_sampled: those clustered.
        clusters: non-empty clusters; cluster_sizes: units per cluster, largest first.
        candidates: questions the model proposed per class (before selection).
        counts: questions written per class (``data_local``, ``data_global``).
        assertions: assertions written.
        dropped: items and assertions left out, with the step and reason.
        usage: model calls, tokens and time of the run.
        settings: the settings used.
    """

    dataset: str
    text_units: str
    report_path: str
    seed: int
    model: str
    embedding_model: str
    units_total: int
    units_sampled: int
    clusters: int
    cluster_sizes: list[int]
    candidates: dict[str, int]
    counts: dict[str, int]
    assertions: int
    dropped: list[DroppedItem]
    usage: TokenUsage
    settings: AutoQSettings


class _Draft(BaseModel):
    id: str
    category: str
    question: str
    units: list[int]
    clusters: list[int]


async def _ask(chat: ChatModel, prompt: str) -> dict[str, object] | str:
    """Return the reply's JSON object, or why there is none."""
    try:
        completion = await chat.complete([Message(role="user", content=prompt)], temperature=0.0)
    except UkrError as exc:
        return f"call failed: {type(exc).__name__}: {exc}"
    data = parse_json_object(completion.text)
    return data if data is not None else "the reply holds no JSON object"


def _numbered(units: Sequence[TextUnitRecord]) -> str:
    return "\n\n".join(f"[{n}] {u.text}" for n, u in enumerate(units, start=1))


def _strings(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return list(dict.fromkeys(v.strip() for v in value if isinstance(v, str) and v.strip()))


def _numbers(value: object) -> list[int] | None:
    """Cited numbers (ints or digit strings); None when something else is cited."""
    if not isinstance(value, list):
        return None
    out: list[int] = []
    for v in value:
        if isinstance(v, bool):
            return None
        if isinstance(v, int):
            out.append(v)
        elif isinstance(v, str) and v.strip().lstrip("[").rstrip("]").isdigit():
            out.append(int(v.strip().lstrip("[").rstrip("]")))
        else:
            return None
    return list(dict.fromkeys(out))


def _round_robin(per_cluster: Sequence[list[str]], limit: int) -> list[tuple[int, str]]:
    """Take ``limit`` questions, one per cluster in turn: ``(cluster index, question)``.

    A question another cluster already gave (same text, case-folded) is skipped.
    """
    out: list[tuple[int, str]] = []
    seen: set[str] = set()
    depth = 0
    while len(out) < limit and any(depth < len(qs) for qs in per_cluster):
        for c, qs in enumerate(per_cluster):
            if depth < len(qs) and len(out) < limit and qs[depth].casefold() not in seen:
                seen.add(qs[depth].casefold())
                out.append((c, qs[depth]))
        depth += 1
    return out


async def generate_questions(
    corpus_dir: Path,
    out_dir: Path,
    chat: ChatModel,
    embedder: Embedder,
    settings: AutoQSettings,
    *,
    force: bool = False,
    on_progress: Callable[[str], None] | None = None,
    prompts: PromptLibrary = PACKAGED,
) -> GenerationReport:
    """Generate ``data_local``/``data_global`` questions and assertions (module docstring).

    Args:
        corpus_dir: folder of ``.txt``/``.md`` files.
        out_dir: where the three files go (created).
        chat: the LLM (the app's wrapped chat model).
        embedder: the embedding model.
        settings: sizes, classes, seed and language.
        force: replace an existing ``out_dir/dataset.jsonl``.
        on_progress: called with a short line per step.
        prompts: the prompts in effect (``autoq_*.v1``; default: the packaged ones).

    Raises:
        UsageError: the corpus folder is missing, unreadable or has no text, the output
            exists without ``force`` or cannot be written.
        EmbeddingModelError: the embedder failed (nothing can be clustered without it).
    """
    say = on_progress or (lambda _: None)
    dataset = out_dir / "dataset.jsonl"
    if dataset.exists() and not force:
        raise UsageError("exists; choose another --out, or pass --force to replace it",
                         field=str(dataset))  # fmt: skip
    units = await asyncio.to_thread(read_units, corpus_dir, settings.unit_tokens)
    if not units:
        raise UsageError("holds no .txt or .md text", field=str(corpus_dir))
    rng = np.random.default_rng(settings.seed)
    picked: list[int] = list(range(len(units)))
    if len(units) > settings.max_units:
        picked = sorted(int(i) for i in rng.choice(len(units), settings.max_units, replace=False))
    sampled = [units[i] for i in picked]
    dropped: list[DroppedItem] = []
    with usage_scope() as usage:
        say(f"Embedding {len(sampled)} of {len(units)} text units")
        vectors = np.asarray(
            await embedder.embed_documents([u.text for u in sampled]), dtype=np.float64
        )
        k = min(settings.clusters, len(sampled))
        labels, centroids = kmeans(vectors, k, rng)
        samples = representative_samples(vectors, labels, centroids, settings.units_per_cluster)
        say(f"Asking for local questions of {len(samples)} clusters")
        topics, local = await _local_questions(chat, sampled, samples, settings, dropped,
                                              prompts)
        drafts: list[_Draft] = []
        if "local" in settings.classes:
            picks = _round_robin(local, settings.per_class)
            for n, (c, question) in enumerate(picks, start=1):
                sample = samples[c]
                drafts.append(_Draft(id=f"local-{n}", category="data_local", question=question,
                                     units=sample.units, clusters=[sample.number]))  # fmt: skip
        n_global = 0
        if "global" in settings.classes:
            say("Asking for global questions")
            global_drafts, n_global = await _global_questions(
                chat, samples, topics, local, settings, dropped, prompts
            )
            drafts += global_drafts
        items = await _finish(chat, sampled, drafts, settings, dropped, say, prompts)
    candidates = {"data_local": sum(len(qs) for qs in local)}
    if "global" in settings.classes:
        candidates["data_global"] = n_global
    counts = {c: sum(1 for i in items if i.category == c) for c in candidates}
    if "local" not in settings.classes:
        counts.pop("data_local")
    report = GenerationReport(
        dataset=str(dataset), text_units=str(out_dir / "text_units.jsonl"),
        report_path=str(out_dir / "generation_report.json"), seed=settings.seed,
        model=chat.model_id, embedding_model=embedder.model_id, units_total=len(units),
        units_sampled=len(sampled), clusters=len(samples),
        cluster_sizes=[s.size for s in samples], candidates=candidates, counts=counts,
        assertions=sum(len(i.assertions) for i in items), dropped=dropped, usage=usage,
        settings=settings,
    )  # fmt: skip
    await asyncio.to_thread(_write, out_dir, sampled, items, report)
    return report


def _write(
    out_dir: Path,
    sampled: Sequence[TextUnitRecord],
    items: Sequence[EvalItem],
    report: GenerationReport,
) -> None:
    """Write the three output files (blocking).

    Raises:
        UsageError: a file cannot be written (the message names it).
    """
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        Path(report.text_units).write_text(
            "".join(u.model_dump_json() + "\n" for u in sampled), encoding="utf-8"
        )
        Path(report.dataset).write_text(
            "".join(i.model_dump_json(exclude_defaults=True) + "\n" for i in items),
            encoding="utf-8",
        )
        Path(report.report_path).write_text(report.model_dump_json(indent=2) + "\n", "utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write: {exc.strerror or exc}",
                         field=str(exc.filename or out_dir)) from exc  # fmt: skip


async def _local_questions(
    chat: ChatModel,
    sampled: Sequence[TextUnitRecord],
    samples: Sequence[ClusterSample],
    settings: AutoQSettings,
    dropped: list[DroppedItem],
    prompts: PromptLibrary,
) -> tuple[list[str], list[list[str]]]:
    """Return each cluster's topic label and questions (empty for a dropped cluster)."""
    template = prompts.get("autoq_local.v1")
    gate = asyncio.Semaphore(_CONCURRENCY)

    async def one(sample: ClusterSample) -> dict[str, object] | str:
        prompt = render_text(template, {
            "count": str(settings.per_class), "language": settings.language,
            "units": _numbered([sampled[i] for i in sample.units]),
        })  # fmt: skip
        async with gate:
            return await _ask(chat, prompt)

    replies = await asyncio.gather(*(one(s) for s in samples))
    topics: list[str] = []
    questions: list[list[str]] = []
    for sample, reply in zip(samples, replies, strict=True):
        qs = _strings(reply.get("questions")) if isinstance(reply, dict) else []
        topic = reply.get("topic") if isinstance(reply, dict) else None
        if isinstance(reply, str) or not qs:
            why = reply if isinstance(reply, str) else "the reply lists no question"
            dropped.append(DroppedItem(item=f"cluster {sample.number}", step="local", reason=why))
        topics.append(topic.strip() if isinstance(topic, str) else "")
        questions.append(qs[: settings.per_class])
    return topics, questions


async def _global_questions(
    chat: ChatModel,
    samples: Sequence[ClusterSample],
    topics: Sequence[str],
    local: Sequence[list[str]],
    settings: AutoQSettings,
    dropped: list[DroppedItem],
    prompts: PromptLibrary,
) -> tuple[list[_Draft], int]:
    """Return the kept global drafts and how many the model proposed."""
    shown = [c for c, qs in enumerate(local) if qs]
    if not shown:
        dropped.append(DroppedItem(item="global", step="global",
                                   reason="no cluster has local questions"))  # fmt: skip
        return [], 0
    blocks = []
    for c in shown:
        label = f" ({topics[c]})" if topics[c] else ""
        lines = "\n".join(f"- {q}" for q in local[c])
        blocks.append(f"Topic {samples[c].number}{label}:\n{lines}")
    prompt = prompts.text("autoq_global.v1", {
        "count": str(settings.per_class), "language": settings.language,
        "topics": "\n\n".join(blocks),
    })  # fmt: skip
    reply = await _ask(chat, prompt)
    entries = reply.get("questions") if isinstance(reply, dict) else None
    if isinstance(reply, str) or not isinstance(entries, list):
        why = reply if isinstance(reply, str) else "the reply lists no question"
        dropped.append(DroppedItem(item="global", step="global", reason=why))
        return [], 0
    by_number = {samples[c].number: c for c in shown}
    drafts: list[_Draft] = []
    proposed = 0
    for entry in entries:
        text = entry.get("question") if isinstance(entry, dict) else entry
        if not isinstance(text, str) or not text.strip():
            continue
        proposed += 1
        if len(drafts) == settings.per_class or any(d.question == text.strip() for d in drafts):
            continue
        cited = _numbers(entry.get("topics")) if isinstance(entry, dict) else None
        used = [by_number[n] for n in cited or [] if n in by_number] or shown
        units = [u for c in used for u in samples[c].units]
        drafts.append(_Draft(id=f"global-{len(drafts) + 1}", category="data_global",
                             question=text.strip(), units=units,
                             clusters=[samples[c].number for c in used]))  # fmt: skip
    if not drafts:
        dropped.append(DroppedItem(item="global", step="global",
                                   reason="the reply lists no question"))  # fmt: skip
    return drafts, proposed


async def _finish(
    chat: ChatModel,
    sampled: Sequence[TextUnitRecord],
    drafts: Sequence[_Draft],
    settings: AutoQSettings,
    dropped: list[DroppedItem],
    say: Callable[[str], None],
    prompts: PromptLibrary,
) -> list[EvalItem]:
    """Turn drafts into dataset rows, asking for each one's assertions when enabled."""
    if not settings.assertions:
        return [_item(d, sampled, [], d.units) for d in drafts]
    say(f"Asking for the assertions of {len(drafts)} questions")
    template = prompts.get("autoq_assertions.v1")
    gate = asyncio.Semaphore(_CONCURRENCY)

    async def one(draft: _Draft) -> dict[str, object] | str:
        prompt = render_text(template, {
            "count": str(settings.max_assertions), "language": settings.language,
            "question": draft.question, "units": _numbered([sampled[i] for i in draft.units]),
        })  # fmt: skip
        async with gate:
            return await _ask(chat, prompt)

    replies = await asyncio.gather(*(one(d) for d in drafts))
    items: list[EvalItem] = []
    for draft, reply in zip(drafts, replies, strict=True):
        entries = reply.get("assertions") if isinstance(reply, dict) else None
        if isinstance(reply, str) or not isinstance(entries, list):
            why = reply if isinstance(reply, str) else "the reply lists no assertions"
            dropped.append(DroppedItem(item=draft.id, step="assertions", reason=why))
            continue
        kept: list[Assertion] = []
        cited_units: list[int] = []
        for n, entry in enumerate(entries, start=1):
            text = entry.get("statement") if isinstance(entry, dict) else None
            if not isinstance(entry, dict) or not isinstance(text, str) or not text.strip():
                continue
            cited = _numbers(entry.get("sources"))
            if not cited or any(not 1 <= c <= len(draft.units) for c in cited):
                dropped.append(DroppedItem(item=f"{draft.id} assertion {n}", step="assertions",
                                           reason="cites unknown unit ids"))  # fmt: skip
                continue
            if len(kept) == settings.max_assertions:
                continue
            units = [draft.units[c - 1] for c in cited]
            cited_units += units
            kept.append(Assertion(text=text.strip(), sources=[sampled[u].id for u in units]))
        if not kept:
            dropped.append(DroppedItem(item=draft.id, step="assertions",
                                       reason="no assertion cites a known unit"))  # fmt: skip
            continue
        items.append(_item(draft, sampled, kept, list(dict.fromkeys(cited_units))))
    return items


def _item(
    draft: _Draft, sampled: Sequence[TextUnitRecord], assertions: list[Assertion], units: list[int]
) -> EvalItem:
    stems = [Path(sampled[u].file).stem for u in units]
    return EvalItem(
        id=draft.id, question=draft.question, supporting=list(dict.fromkeys(stems)),
        category=draft.category, assertions=assertions,
        metadata={"clusters": draft.clusters,
                  "source_units": [sampled[u].id for u in draft.units]},
    )  # fmt: skip
