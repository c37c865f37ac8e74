"""The prompts in effect: every packaged template, each possibly replaced by a user's text.

A `PromptLibrary` is immutable. It is built once when the app starts (`config.prompts
.load_prompt_library` reads the override files) and handed to every place that renders a
prompt, so an override reaches every call site without global state. Each packaged prompt's
placeholders are declared by its packaged text; an override is checked against them when it
enters the library. Source: seed 000 §11.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

import regex

from unified_kg_rag.domain.models import Message
from unified_kg_rag.domain.prompts import load_prompt
from unified_kg_rag.domain.prompts.render import placeholders, render_messages, render_text
from unified_kg_rag.util.errors import ConfigurationError

__all__ = [
    "EXTRA_PLACEHOLDERS",
    "OPTIONAL_PLACEHOLDERS",
    "PACKAGED",
    "PromptLibrary",
    "packaged_names",
]

OPTIONAL_PLACEHOLDERS = frozenset({
    "entity_types", "community_name", "language", "count", "max_words", "max_steps",
    "max_bridges", "max_queries", "schema_types", "n", "claim_description", "claim_types",
})  # fmt: skip
"""Placeholders that carry a setting rather than the input; an override may leave them out
(an extraction prompt that names its own entity types has no ``{entity_types}``). Every other
declared placeholder carries the prompt's input and is required."""

EXTRA_PLACEHOLDERS = {
    "extract_graph.v1": frozenset({"schema_types"}),
    "glean_graph.v1": frozenset({"schema_types"}),
}
"""Placeholders a prompt accepts beyond those of its packaged text: an extraction or gleaning
override may show the extraction schema where it wants it (``{schema_types}``, filled by
the schema step like its ``*_schema`` variant's)."""

_VERSIONED = regex.compile(r"^(?P<base>[a-z0-9_]+)\.v(?P<version>\d+)$")


@cache
def packaged_names() -> tuple[str, ...]:
    """Return the names of the packaged templates, sorted (``("answer_system.v1", ...)``)."""
    files = resources.files("unified_kg_rag.domain.prompts").iterdir()
    return tuple(sorted(f.name[:-3] for f in files if f.name.endswith(".md")))


def _hint(name: str, names: tuple[str, ...], bases: list[str]) -> str:
    """Return `` (did you mean ...)`` for an unknown prompt name close to a known one."""
    base, _, version = name.rpartition(".v")
    if base and version.isdigit() and base in bases:
        have = ", ".join(n[len(base) + 1:] for n in names if n.startswith(base + ".v"))
        return f" ({base} exists as {have})"
    lowered = name.lower()
    if lowered != name:
        try:
            PACKAGED.resolve(lowered)
        except ConfigurationError:
            pass
        else:
            return f" (names are case-sensitive: did you mean {lowered!r}?)"
    close = difflib.get_close_matches(name, bases, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass(frozen=True)
class _Override:
    text: str
    source: str


@dataclass(frozen=True)
class PromptLibrary:
    """The prompt templates in effect: packaged ones and the user's overrides.

    Names are the packaged file names without ``.md`` (``extract_graph.v1``); every method
    also accepts the name without its version suffix (``extract_graph``).

    Attributes:
        overrides: canonical name → the override's text and where it came from.
    """

    overrides: Mapping[str, _Override] = field(default_factory=dict)

    # ------------------------------------------------------------------ names

    def names(self) -> tuple[str, ...]:
        """Return every prompt name (packaged, versioned), sorted."""
        return packaged_names()

    def resolve(self, name: str) -> str:
        """Return the canonical name of ``name`` (``extract_graph`` → ``extract_graph.v1``).

        A name without a version reads as the newest packaged version of that prompt.

        Raises:
            ConfigurationError: no packaged prompt has that name (the message lists them,
                naming the versions a versioned name has or a close match).
        """
        names = packaged_names()
        if name in names:
            return name
        versions = [(int(m["version"]), n) for n in names
                    if (m := _VERSIONED.match(n)) and m["base"] == name]  # fmt: skip
        if versions:
            return max(versions)[1]
        bases = sorted({m["base"] for n in names if (m := _VERSIONED.match(n))})
        raise ConfigurationError(f"no prompt named {name!r}{_hint(name, names, bases)}; "
                                 f"prompts: {', '.join(bases)}")  # fmt: skip

    # ------------------------------------------------------------------ texts

    def get(self, name: str) -> str:
        """Return the template text in effect for prompt ``name``.

        Raises:
            ConfigurationError: no packaged prompt has that name.
        """
        canonical = self.resolve(name)
        override = self.overrides.get(canonical)
        return override.text if override is not None else load_prompt(canonical)

    def packaged(self, name: str) -> str:
        """Return the packaged text of prompt ``name`` (ignoring any override)."""
        return load_prompt(self.resolve(name))

    def source(self, name: str) -> str:
        """Return where the text in effect comes from: ``packaged`` or the override's path."""
        override = self.overrides.get(self.resolve(name))
        return override.source if override is not None else "packaged"

    def placeholders(self, name: str) -> frozenset[str]:
        """Return the placeholders prompt ``name`` declares (packaged and `EXTRA_PLACEHOLDERS`)."""
        canonical = self.resolve(name)
        extra = EXTRA_PLACEHOLDERS.get(canonical, frozenset())
        return placeholders(load_prompt(canonical)) | extra

    def required(self, name: str) -> frozenset[str]:
        """Return the declared placeholders an override must keep (not `OPTIONAL_PLACEHOLDERS`)."""
        return self.placeholders(name) - OPTIONAL_PLACEHOLDERS

    def messages(self, name: str, values: Mapping[str, str]) -> list[Message]:
        """Render chat template ``name`` into ``[system, user]`` (`render.render_messages`)."""
        return render_messages(self.get(name), values)

    def text(self, name: str, values: Mapping[str, str] | None = None) -> str:
        """Render whole-text template ``name`` into one text (`render.render_text`)."""
        return render_text(self.get(name), values)

    # ------------------------------------------------------------------ overrides

    def check(self, name: str, text: str, source: str) -> None:
        """Check an override's placeholders against those prompt ``name`` declares.

        Raises:
            ConfigurationError: ``SOURCE: the override is empty`` (blank text),
                ``SOURCE: missing placeholder {x}`` (a required one is not there) or
                ``SOURCE: unknown placeholder {x} (prompt NAME has {a}, {b})``.
        """
        if not text.strip():
            raise ConfigurationError("the override is empty", source=source)
        declared = self.placeholders(name)
        found = placeholders(text)
        missing = sorted(self.required(name) - found)
        if missing:
            raise ConfigurationError(
                f"missing placeholder {', '.join('{' + p + '}' for p in missing)}", source=source
            )
        unknown = sorted(found - declared)
        if unknown:
            has = ", ".join("{" + p + "}" for p in sorted(declared)) or "none"
            raise ConfigurationError(
                f"unknown placeholder {', '.join('{' + p + '}' for p in unknown)} "
                f"(prompt {self.resolve(name)} has {has}; write {{{{ and }}}} for literal "
                "braces)",
                source=source,
            )

    def with_override(self, name: str, text: str, source: str) -> PromptLibrary:
        """Return a library where ``text`` (read from ``source``) replaces prompt ``name``.

        Raises:
            ConfigurationError: an unknown prompt name, or the text fails `check`.
        """
        canonical = self.resolve(name)
        self.check(canonical, text, source)
        return PromptLibrary({**self.overrides, canonical: _Override(text, source)})


PACKAGED = PromptLibrary()
"""The packaged prompts, no override (the default of every call site)."""
