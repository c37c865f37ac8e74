"""Prompt tuning: a corpus profile from the LLM, domain-adapted prompts and a draft schema.

After MS GraphRAG's prompt tuning (seed 000 §11): a deterministic sample of the corpus's text
units is shown to the LLM (``tune_profile.v1``), which replies with a JSON profile (domain,
persona, language, entity and relationship types, allowed patterns). The profile then adapts
the packaged extraction and community-report prompts (a domain note, ``tune_extract_note.v1``
and ``tune_report_note.v1``, inserted after their first paragraph: the XML record format and
every placeholder stay as packaged) and gives a draft extraction schema. Pure: the I/O is in
`unified_kg_rag.ingestion.prompt_tune`.
"""

from __future__ import annotations

from collections.abc import Sequence

import regex
from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.llm.json_reply import parse_json_object
from unified_kg_rag.domain.models import Message
from unified_kg_rag.domain.prompts.library import PromptLibrary
from unified_kg_rag.util.errors import ModelOutputError

__all__ = [
    "ADAPTED_PROMPTS",
    "MAX_ENTITY_TYPES",
    "MAX_RELATIONSHIP_TYPES",
    "PROFILE_PROMPT",
    "CorpusProfile",
    "TypeInfo",
    "adapted_prompts",
    "draft_schema",
    "parse_profile",
    "profile_messages",
    "sample_indices",
]

PROFILE_PROMPT = "tune_profile.v1"
"""The prompt that asks for the corpus profile."""

ADAPTED_PROMPTS = {"extract_graph.v1": "tune_extract_note.v1",
                   "extract_graph_schema.v1": "tune_extract_note.v1",
                   "community_report.v1": "tune_report_note.v1"}  # fmt: skip
"""Prompt adapted → the note template inserted into it. The extraction prompt's schema
variant is adapted too: with an extraction schema (``--schema-out`` put in
``schema_sources``) extraction uses it, so a tuned plain prompt alone would be passed over
for the packaged variant or, if only it were written, show no schema."""

MAX_ENTITY_TYPES = 30
"""Entity types a profile keeps (the prompt asks for 3-12); later ones are dropped."""

MAX_RELATIONSHIP_TYPES = 40
"""Relationship types a profile keeps; later ones are dropped."""

_NOT_NAME = regex.compile(r"[^\p{L}\p{M}\p{N}]+")
_PROFILE_KEYS = ("domain", "persona", "entity_types", "relationship_types")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TypeInfo(_Frozen):
    """An entity or relationship type of the profile.

    Attributes:
        name: upper case with underscores (``CLINICAL_TRIAL``).
        description: one sentence ("" when the model gave none).
        synonyms: other names of the type (entity types only; may be empty).
    """

    name: str
    description: str = ""
    synonyms: tuple[str, ...] = ()


class CorpusProfile(_Frozen):
    """What the LLM read in the corpus sample.

    Attributes:
        domain: the subject area, a short phrase.
        persona: the expert who would analyse the documents, one sentence.
        language: the language descriptions and reports are written in.
        entity_types: at least one, names unique.
        relationship_types: names unique (may be empty).
        patterns: allowed ``(source type, relationship type, target type)`` triples, each
            naming listed types only.
        warnings: what reading the reply dropped (types over `MAX_ENTITY_TYPES` /
            `MAX_RELATIONSHIP_TYPES`), one line each.
    """

    domain: str
    persona: str
    language: str
    entity_types: tuple[TypeInfo, ...]
    relationship_types: tuple[TypeInfo, ...] = ()
    patterns: tuple[tuple[str, str, str], ...] = ()
    warnings: tuple[str, ...] = ()


def sample_indices(count: int, n: int) -> list[int]:
    """Return ``min(n, count)`` indices of ``range(count)`` spread evenly, first one 0.

    Deterministic: the same corpus gives the same sample, so a rerun asks the same question
    (and hits the response cache).
    """
    if n <= 0 or count <= 0:
        return []
    if n >= count:
        return list(range(count))
    return [i * count // n for i in range(n)]


def profile_messages(
    library: PromptLibrary, passages: Sequence[str], *, language: str | None
) -> list[Message]:
    """Return the profile request (``tune_profile.v1``) for the sampled ``passages``.

    Args:
        library: the prompts in effect.
        passages: the sampled text units' texts, in corpus order.
        language: the language to write in (None: the one most passages use).
    """
    wanted = (
        f'"{language}" (the user chose it; write exactly that)'
        if language
        else "the language most of the passages are written in, by its English name"
    )
    text = "\n\n".join(f"[{i}] {' '.join(p.split())}" for i, p in enumerate(passages, 1))
    return library.messages(PROFILE_PROMPT, {
        "passages": text, "count": str(len(passages)), "language": wanted,
    })  # fmt: skip


def _type_name(value: object) -> str:
    return _NOT_NAME.sub("_", str(value).upper()).strip("_") if isinstance(value, str) else ""


def _text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _types(
    obj: dict[str, object], key: str, *, required: bool, cap: int, warnings: list[str]
) -> tuple[TypeInfo, ...]:
    raw = obj.get(key)
    if not isinstance(raw, list) or (required and not raw):
        raise ModelOutputError(f"the profile reply has no list {key!r}")
    seen: dict[str, TypeInfo] = {}
    for item in raw:
        entry = {str(k).lower(): v for k, v in item.items()} if isinstance(item, dict) else {
            "name": item}
        name = _type_name(entry.get("name"))
        if not name or name in seen:
            continue
        synonyms = entry.get("synonyms")
        seen[name] = TypeInfo(
            name=name, description=_text(entry.get("description")),
            synonyms=tuple(s for s in (_text(x) for x in synonyms) if s)
            if isinstance(synonyms, list) else (),
        )  # fmt: skip
    if required and not seen:
        raise ModelOutputError(f"the profile reply's {key!r} names no type")
    if len(seen) > cap:
        warnings.append(f"the profile reply lists {len(seen)} {key.replace('_', ' ')}; "
                        f"kept the first {cap}")  # fmt: skip
    return tuple(seen.values())[:cap]


def parse_profile(reply: str, *, language: str | None = None) -> CorpusProfile:
    """Read the profile reply (JSON, leniently: fences, prose, reasoning around it).

    Type names are normalised to upper case with underscores (letters and digits of any
    script are kept: ``人物`` stays ``人物``) and deduplicated; the first `MAX_ENTITY_TYPES`
    entity types and `MAX_RELATIONSHIP_TYPES` relationship types are kept (a warning says
    so); patterns naming a type the profile does not keep are dropped.

    Args:
        reply: the model's reply text.
        language: the user's ``--language``; wins over the reply's.

    Raises:
        ModelOutputError: no JSON object, an object with none of the profile's keys (a
            reply cut off mid-object, say), or ``domain``, ``persona``, ``entity_types`` or
            ``relationship_types`` missing or empty (``language`` too, without ``language``).
    """
    obj = parse_json_object(reply)
    if obj is None:
        shown = " ".join(reply.split())[:80]
        raise ModelOutputError(f"the profile reply holds no JSON object: {shown!r}")
    obj = {str(k).lower(): v for k, v in obj.items()}
    if not any(key in obj for key in _PROFILE_KEYS):  # a cut-off reply: an inner object read
        shown = " ".join(reply.split())[:80]
        raise ModelOutputError(f"the profile reply holds no complete profile object: {shown!r}")
    fields = {key: _text(obj.get(key)) for key in ("domain", "persona", "language")}
    if language:
        fields["language"] = language
    missing = [key for key, value in fields.items() if not value]
    if missing:
        raise ModelOutputError(f"the profile reply lacks {', '.join(map(repr, missing))}")
    warnings: list[str] = []
    entities = _types(obj, "entity_types", required=True, cap=MAX_ENTITY_TYPES,
                      warnings=warnings)  # fmt: skip
    relations = _types(obj, "relationship_types", required=False,
                       cap=MAX_RELATIONSHIP_TYPES, warnings=warnings)  # fmt: skip
    if "relationship_types" not in obj:
        raise ModelOutputError("the profile reply has no list 'relationship_types'")
    ent_names = {t.name for t in entities}
    rel_names = {t.name for t in relations}
    patterns: dict[tuple[str, str, str], None] = {}
    raw = obj.get("patterns")
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, list) and len(item) == 3:
            s, r, t = (_type_name(x) for x in item)
            if s in ent_names and r in rel_names and t in ent_names:
                patterns[(s, r, t)] = None
    return CorpusProfile(
        domain=fields["domain"], persona=fields["persona"], language=fields["language"],
        entity_types=entities, relationship_types=relations, patterns=tuple(patterns),
        warnings=tuple(warnings),
    )  # fmt: skip


def _described(types: Sequence[TypeInfo]) -> str:
    lines = [f"- {t.name}: {t.description}" if t.description else f"- {t.name}" for t in types]
    return "\n".join(lines) or "- (none seen)"


def adapted_prompts(library: PromptLibrary, profile: CorpusProfile) -> dict[str, str]:
    """Return the domain-adapted prompt texts, prompt name → text (override files' content).

    Each is the packaged prompt with its note (`ADAPTED_PROMPTS`) inserted after the first
    paragraph of its system part; the profile's braces become parentheses, so they are never
    read as placeholders. Every text passes the override check (`PromptLibrary.check`).

    Raises:
        ConfigurationError: an adapted text fails the placeholder check (a note override
            that added a placeholder, say).
    """
    values = {
        "domain": profile.domain, "persona": _sentence(profile.persona),
        "language": profile.language,
        "entity_types": _described(profile.entity_types),
        "relationship_types": _described(profile.relationship_types),
    }  # fmt: skip
    # no brace of the model's text may read as a placeholder (or switch on escapes)
    values = {k: v.replace("{", "(").replace("}", ")") for k, v in values.items()}
    out: dict[str, str] = {}
    for name, note_name in ADAPTED_PROMPTS.items():
        note = library.text(note_name, values).strip()
        packaged = library.packaged(name)
        head, sep, rest = packaged.partition("\n\n")
        text = f"{head}\n\n{note}{sep}{rest}" if sep else f"{note}\n\n{packaged}"
        library.check(name, text, f"adapted {name}")
        out[name] = text
    return out


def draft_schema(profile: CorpusProfile) -> dict[str, object]:
    """Return the draft extraction schema of ``profile`` (the ``--schema-out`` YAML's data).

    Shape: ``entity_types`` (name, description, synonyms), ``relationship_types`` (name,
    description) and ``patterns`` (``[source, relation, target]`` lists).
    """
    return {
        "entity_types": [{"name": t.name, "description": t.description,
                          "synonyms": list(t.synonyms)} for t in profile.entity_types],
        "relationship_types": [{"name": t.name, "description": t.description}
                               for t in profile.relationship_types],
        "patterns": [list(p) for p in profile.patterns],
    }  # fmt: skip


def _sentence(text: str) -> str:
    """``text`` ending as a sentence (a full stop added when it has no final punctuation)."""
    text = text.strip()
    return text if not text or text[-1] in ".!?。！？" else text + "."
