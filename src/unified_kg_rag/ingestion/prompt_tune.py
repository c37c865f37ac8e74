"""`ukr prompt-tune`: profile a corpus sample with the LLM and write domain-adapted prompts.

The corpus is read with the product's own discovery, parsing and chunking
(`ingestion.corpus.discover`, `ingestion.prepare.parse_and_chunk`, as `ukr index` does), a
deterministic sample of its text units goes to the LLM once (``tune_profile.v1``), and the
profile's adapted prompts (and optionally a draft extraction schema) are written. Every text
is prepared and checked before the first file is written, and each file is replaced
atomically, so a failure writes nothing half. After MS GraphRAG's prompt tuning (seed 000 §11).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.llm.cache_control import accept_replies
from unified_kg_rag.domain.prompts.library import PromptLibrary
from unified_kg_rag.domain.prompts.tuning import (
    ADAPTED_PROMPTS,
    CorpusProfile,
    adapted_prompts,
    draft_schema,
    parse_profile,
    profile_messages,
    sample_indices,
)
from unified_kg_rag.ingestion.corpus import discover
from unified_kg_rag.ingestion.prepare import parse_and_chunk
from unified_kg_rag.ports import ChatModel, DocumentParser, TokenCounter
from unified_kg_rag.util.errors import ConfigurationError, InputError, UsageError

__all__ = ["TuneResult", "planned_files", "tune_prompts"]

_REPLY_TOKENS = 2000


@dataclass
class TuneResult:
    """What `tune_prompts` read and wrote.

    Attributes:
        profile: the corpus profile the LLM gave.
        units: text units the corpus holds (of the documents read).
        sampled: text units shown to the LLM.
        documents: documents read.
        skipped: ``path: reason`` of the files left out (unreadable, unsupported).
        written: the files written, prompts first, then the schema.
    """

    profile: CorpusProfile
    units: int
    sampled: int
    documents: int
    skipped: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)


def _read_units(
    paths: Sequence[Path],
    config: UkrConfig,
    tokenizer: TokenCounter,
    parsers: Mapping[str, DocumentParser],
) -> tuple[list[str], int, list[str]]:
    files, left_out = discover(paths, parsing=config.parsing, extensions=sorted(parsers))
    skipped = [f"{s.display_path}: {s.reason}" for s in left_out]
    texts: list[str] = []
    documents = 0
    for file in files:
        try:
            _, units = parse_and_chunk(file, None, config=config, tokenizer=tokenizer,
                                       parsers=parsers)  # fmt: skip
        except InputError as exc:
            skipped.append(str(exc))
            continue
        documents += 1
        texts.extend(u.text for u in units)
    return texts, documents, skipped


def _shown(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def planned_files(
    out_dir: Path, schema_out: Path | None, *, force: bool
) -> tuple[dict[str, Path], list[Path]]:
    """Return where each adapted prompt goes and the files to remove, refusing to overwrite.

    A prompt's override in ``out_dir`` may be named with or without its version
    (``extract_graph.md``, ``extract_graph.v1.md``; ``prompts.dir`` reads both, and both
    at once is an error), so either name counts as the prompt's existing file. With
    ``force`` the file that is there is replaced under its own name; when both names are
    there, ``NAME.md`` is written and the versioned one removed.

    Returns:
        ``(prompt name → path, paths to remove)``.

    Raises:
        UsageError: without ``force``, a file it would write (or an override of the same
            prompt) exists: ``FILE exists; pass --force to replace it``.
    """
    targets: dict[str, Path] = {}
    remove: list[Path] = []
    existing: list[Path] = []
    for name in ADAPTED_PROMPTS:
        plain = out_dir / f"{name.rsplit('.v', 1)[0]}.md"
        versioned = out_dir / f"{name}.md"
        there = [p for p in (plain, versioned) if p.is_file()]
        existing.extend(there)
        targets[name] = versioned if there == [versioned] else plain
        if len(there) == 2:
            remove.append(versioned)
    if schema_out is not None and schema_out.exists():
        existing.append(schema_out)
    if existing and not force:
        raise UsageError(f"{_shown(existing[0])} exists; pass --force to replace it",
                         field="out")  # fmt: skip
    return targets, remove


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


async def tune_prompts(
    paths: Sequence[Path],
    *,
    config: UkrConfig,
    chat: ChatModel | None,
    tokenizer: TokenCounter,
    parsers: Mapping[str, DocumentParser],
    prompts: PromptLibrary,
    out_dir: Path,
    schema_out: Path | None = None,
    sample: int = 15,
    language: str | None = None,
    force: bool = False,
) -> TuneResult:
    """Profile a sample of the corpus with ``chat`` and write the adapted prompts.

    Writes ``OUT/extract_graph.md``, ``OUT/extract_graph_schema.md`` and
    ``OUT/community_report.md`` (override files for ``prompts.dir: OUT``) and, with
    ``schema_out``, the draft schema as YAML (``entity_types``, ``relationship_types``,
    ``patterns``).

    Args:
        paths: corpus files and folders, as for ``ukr index``.
        config: the effective configuration (``parsing``, ``chunking``).
        chat: the wrapped LLM (None: refused).
        tokenizer: the tokenizer text units are measured in (the app's chunk tokenizer).
        parsers: parser per file extension.
        prompts: the prompts in effect (``tune_*`` may be overridden too).
        out_dir: the folder the prompt files go to.
        schema_out: the draft schema's file (None: none written).
        sample: the text units shown to the LLM (evenly spread over the corpus order).
        language: the language descriptions and reports are written in (None: the one
            the LLM reads in the sample).
        force: replace files that exist (`planned_files`); without it an existing one is
            refused before the corpus is read.

    Raises:
        ConfigurationError: no LLM is configured (``llm.kind: none``).
        UsageError: the corpus holds no readable text unit, ``sample`` is below 1, or a
            file it would write exists (without ``force``).
        ModelOutputError: the reply is not a JSON profile (a missing field named).
        ModelError: the model call failed.
    """
    if chat is None:
        raise ConfigurationError(
            "prompt-tune needs an LLM: set llm.kind (it is `none`)", field="llm.kind"
        )
    if sample < 1:
        raise UsageError("--sample must be at least 1", field="sample")
    targets, remove = planned_files(out_dir, schema_out, force=force)
    texts, documents, skipped = await asyncio.to_thread(
        _read_units, paths, config, tokenizer, parsers
    )
    if not texts:
        shown = f" ({skipped[0]})" if skipped else ""
        raise UsageError(f"the corpus holds no readable text{shown}", field="corpus")
    chosen = [texts[i] for i in sample_indices(len(texts), sample)]
    # a reply that cannot be read is neither cached nor served, so a retry asks again
    with accept_replies(lambda text: parse_profile(text, language=language) is not None):
        reply = await chat.complete(
            profile_messages(prompts, chosen, language=language),
            max_tokens=_REPLY_TOKENS, temperature=0.0,
        )  # fmt: skip
    profile = parse_profile(reply.text, language=language)
    files = {targets[name]: text for name, text in adapted_prompts(prompts, profile).items()}
    if schema_out is not None:
        files[schema_out] = yaml.safe_dump(
            draft_schema(profile), sort_keys=False, allow_unicode=True, width=100
        )
    for path, text in files.items():
        await asyncio.to_thread(_write, path, text)
    for path in remove:
        path.unlink(missing_ok=True)
    return TuneResult(profile=profile, units=len(texts), sampled=len(chosen),
                      documents=documents, skipped=skipped, written=list(files))  # fmt: skip
