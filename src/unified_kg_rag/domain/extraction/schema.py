"""The extraction schema: declared entity and relationship types, allowed patterns, synonyms.

What belongs here: the pure model of an extraction schema (`ExtractionSchema`), the schema
document a schema file or an inline ``schema_sources`` entry holds (`SchemaDocument`, the
shape ``ukr prompt-tune --schema-out`` writes), label keys (`schema_key`, `upper_snake`),
merging several sources into one schema (`merge_schemas`) and one-line messages for invalid
documents (`document_error`). Reading files and ontologies is I/O and lives in
``adapters/schema_sources``; checking extracted items against a schema lives in
`unified_kg_rag.domain.extraction.schema_conformance`. Source: seed 000 §4.2 ("Schema
annotations"), §12 ("Extraction schema"); seed 003 ("Bring-your-own ontology").

A schema file::

    entity_types:
      - name: PERSON
        description: A human being.
        iri: https://schema.org/Person      # optional
        synonyms: [HUMAN, INDIVIDUAL]       # optional: other type names meaning this type
        parents: [AGENT]                    # optional: declared types this is a kind of
    relationship_types:
      - name: WORKS_FOR
        description: The source is employed by the target.
        iri: https://schema.org/worksFor    # optional
    patterns:
      - [PERSON, WORKS_FOR, ORGANIZATION]

A bare name is shorthand for a type without description (``entity_types: [PERSON, CITY]``),
and ``synonyms`` takes one name or a list.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Sequence
from functools import cached_property

import regex
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from unified_kg_rag.util.hashing import sha256_json

__all__ = [
    "EntityTypeSpec",
    "ExtractionSchema",
    "RelationshipTypeSpec",
    "SchemaDocument",
    "SchemaPattern",
    "document_error",
    "merge_schemas",
    "safe_name_synonyms",
    "schema_from_document",
    "schema_key",
    "schema_prompt_block",
    "undeclared_in_patterns",
    "upper_snake",
]

logger = logging.getLogger(__name__)

SchemaPattern = tuple[str, str, str]
"""An allowed (source entity type, relationship type, target entity type)."""

_SEPARATORS = regex.compile(r"[\s_\-]+")
_CAMEL = regex.compile(r"(?<=\p{Ll}|\p{Nd})(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})")
_NOT_WORD = regex.compile(r"[^\p{L}\p{N}_]+")


def schema_key(label: str) -> str:
    """Return the comparison key of a type label: NFKC, upper case, separators as one ``_``.

    ``"works for"``, ``"Works-For"`` and ``"WORKS_FOR"`` share the key ``WORKS_FOR``; a key is
    its own key. Nothing looser (plurals, edit distance) matches here; that is alignment's job
    (`schema_conformance.align_by_name`).
    """
    text = unicodedata.normalize("NFKC", label).strip()
    return _SEPARATORS.sub("_", text).strip("_").casefold().upper()


def upper_snake(label: str) -> str:
    """Return a label as an upper snake-case type name: ``"worksFor"`` → ``WORKS_FOR``.

    Camel-case humps and every run of characters that are not letters or digits become one
    ``_`` (``"Creative work"`` → ``CREATIVE_WORK``, ``"HTTPServer"`` → ``HTTP_SERVER``).
    """
    text = unicodedata.normalize("NFKC", label).strip()
    text = _CAMEL.sub("_", text)
    return schema_key(_NOT_WORD.sub("_", text))


class _Doc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _name(value: str) -> str:
    key = schema_key(value)
    if not key:
        raise ValueError("a type name must not be blank")
    return key


def _shorthand(value: object) -> object:
    """A bare name (``PERSON``) stands for ``{name: PERSON}``."""
    return {"name": value} if isinstance(value, str) else value


class EntityTypeSpec(_Doc):
    """A declared entity type (a bare string is shorthand for ``{name: ...}``).

    Attributes:
        name: the type name, as its `schema_key` (``PERSON``); what the prompt offers.
        description: what the type means (offered to the model with the name).
        iri: the ontology term it stands for (written as `Entity.type_iri`), if any.
        synonyms: other type names meaning this type (keys; ``HUMAN`` for ``PERSON``): an
            extracted type named so is in schema and takes this name.
        parents: the declared types this one is a kind of (keys; ``rdfs:subClassOf``): a
            pattern naming a parent allows its kinds too (`ExtractionSchema.allows`).
    """

    name: str
    description: str = ""
    iri: str | None = None
    synonyms: tuple[str, ...] = ()
    parents: tuple[str, ...] = ()

    _n = field_validator("name")(_name)
    _s = model_validator(mode="before")(_shorthand)

    @field_validator("synonyms", "parents", mode="before")
    @classmethod
    def _one(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("synonyms", "parents")
    @classmethod
    def _keys(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k for v in value if (k := schema_key(v))))


class RelationshipTypeSpec(_Doc):
    """A declared relationship type (a bare string is shorthand for ``{name: ...}``).

    Attributes:
        name: the type name, as its `schema_key` (``WORKS_FOR``).
        description: what it means (the direction: source → target).
        iri: the ontology property it stands for (written as `Relationship.predicate_iri`).
    """

    name: str
    description: str = ""
    iri: str | None = None

    _n = field_validator("name")(_name)
    _s = model_validator(mode="before")(_shorthand)


class SchemaDocument(_Doc):
    """A schema file's content (also an inline ``schema_sources`` entry's).

    Patterns may name types another source declares: they are checked against the merged
    schema (`undeclared_in_patterns`), not here.

    Raises (on validation):
        ValidationError: an unknown key, a blank name, or a name declared twice.
    """

    entity_types: tuple[EntityTypeSpec, ...] = ()
    relationship_types: tuple[RelationshipTypeSpec, ...] = ()
    patterns: tuple[SchemaPattern, ...] = ()

    @field_validator("patterns")
    @classmethod
    def _pattern_keys(cls, value: tuple[SchemaPattern, ...]) -> tuple[SchemaPattern, ...]:
        return tuple((_name(s), _name(r), _name(t)) for s, r, t in value)

    @model_validator(mode="after")
    def _consistent(self) -> SchemaDocument:
        for kind, names in (
            ("entity_types", [t.name for t in self.entity_types]),
            ("relationship_types", [t.name for t in self.relationship_types]),
        ):
            if dupes := sorted({n for n in names if names.count(n) > 1}):
                raise ValueError(f"{kind} declares {', '.join(dupes)} more than once")
        return self


def undeclared_in_patterns(patterns: Sequence[SchemaPattern], schema: ExtractionSchema) -> str:
    """Return why the first of ``patterns`` naming a type ``schema`` lacks is wrong, else "".

    ``schema`` is the merged schema of every source, so a patterns-only file may name types
    an ontology beside it declares. The message reads ``patterns.<i>: relationship type R is
    not declared in any schema source``.
    """
    entities = {t.name for t in schema.entity_types}
    relations = {t.name for t in schema.relationship_types}
    for i, (src, rel, dst) in enumerate(patterns):
        for what, name, known in (
            ("source", src, entities), ("relationship", rel, relations),
            ("target", dst, entities),
        ):  # fmt: skip
            if name not in known:
                return f"patterns.{i}: {what} type {name} is not declared in any schema source"
    return ""


class ExtractionSchema(_Doc):
    """The schema extraction is checked against, merged from every configured source.

    Attributes:
        entity_types: declared entity types, in source order (the prompt's order).
        relationship_types: declared relationship types, in source order.
        patterns: allowed (source type, relationship type, target type); a relationship
            type no pattern names may link any pair of types.
        name_synonyms: (alias entity name, canonical entity name) pairs: an entity named by
            the alias is the entity named by the canonical name (SKOS ``altLabel`` /
            ``hiddenLabel`` → ``prefLabel``), used by resolution.
    """

    entity_types: tuple[EntityTypeSpec, ...] = ()
    relationship_types: tuple[RelationshipTypeSpec, ...] = ()
    patterns: tuple[SchemaPattern, ...] = ()
    name_synonyms: tuple[tuple[str, str], ...] = ()

    @cached_property
    def fingerprint(self) -> str:
        """The digest of the whole schema (types, descriptions, IRIs, patterns, synonyms)."""
        return sha256_json(self.model_dump(mode="json"))

    @cached_property
    def _entity_index(self) -> dict[str, EntityTypeSpec]:
        index: dict[str, EntityTypeSpec] = {}
        for spec in self.entity_types:  # names first, then synonyms: a name always wins
            index.setdefault(spec.name, spec)
        for spec in self.entity_types:
            for synonym in spec.synonyms:
                index.setdefault(synonym, spec)
        return index

    @cached_property
    def _relationship_index(self) -> dict[str, RelationshipTypeSpec]:
        return {spec.name: spec for spec in self.relationship_types}

    @cached_property
    def _pattern_set(self) -> frozenset[SchemaPattern]:
        return frozenset(self.patterns)

    def entity_type(self, label: str) -> EntityTypeSpec | None:
        """Return the declared entity type ``label`` names (by key or synonym), else None."""
        return self._entity_index.get(schema_key(label))

    def relationship_type(self, label: str) -> RelationshipTypeSpec | None:
        """Return the declared relationship type ``label`` names (by key), else None."""
        return self._relationship_index.get(schema_key(label))

    @cached_property
    def _patterned(self) -> frozenset[str]:
        return frozenset(r for _, r, _ in self.patterns)

    @cached_property
    def _lineage(self) -> dict[str, frozenset[str]]:
        """Each declared entity type → itself and its ancestors (``parents``, transitive)."""
        parents = {t.name: t.parents for t in self.entity_types}
        out: dict[str, frozenset[str]] = {}
        for name in parents:
            seen, todo = {name}, [name]
            while todo:
                for parent in parents.get(todo.pop(), ()):
                    if parent not in seen:
                        seen.add(parent)
                        todo.append(parent)
            out[name] = frozenset(seen)
        return out

    def allows(self, source_type: str, relation: str, target_type: str) -> bool:
        """Whether the patterns allow (source type, relation, target type).

        Patterns constrain only the relationship types they name: a type no pattern names
        may link any two types (an ontology property without ``rdfs:domain``/``rdfs:range``).
        A pattern naming a type allows its kinds too (``parents``, transitive: ``PERSON``
        a kind of ``AGENT`` fits ``AGENT WORKS_FOR ORGANIZATION``). All three are declared
        names (`entity_type(...).name`, `relationship_type(...).name`).
        """
        if relation not in self._patterned:
            return True
        sources = self._lineage.get(source_type, frozenset({source_type}))
        targets = self._lineage.get(target_type, frozenset({target_type}))
        return any((s, relation, t) in self._pattern_set for s in sources for t in targets)

    @property
    def declares_types(self) -> bool:
        """Whether the schema declares an entity or relationship type (else: synonyms only)."""
        return bool(self.entity_types or self.relationship_types)

    def entity_type_names(self) -> list[str]:
        """The declared entity type names, in order (what the extraction prompt offers)."""
        return [t.name for t in self.entity_types]


def schema_from_document(document: SchemaDocument) -> ExtractionSchema:
    """Return the `ExtractionSchema` a schema document declares (no name synonyms)."""
    return ExtractionSchema(
        entity_types=document.entity_types,
        relationship_types=document.relationship_types,
        patterns=document.patterns,
    )


def merge_schemas(schemas: Sequence[ExtractionSchema]) -> ExtractionSchema:
    """Merge several sources' schemas into one, in source order.

    A type declared by several sources is one type: the first non-empty description and
    the first IRI win (a warning names a type two sources describe or map differently),
    synonyms are united. Patterns are united (first occurrence's order). A name synonym
    whose alias two sources map to different canonical names, or whose alias is another
    pair's canonical name, is left out (a warning gives the count): it would merge two
    different entities.
    """
    entities: dict[str, EntityTypeSpec] = {}
    for spec in (t for s in schemas for t in s.entity_types):
        if (old := entities.get(spec.name)) is None:
            entities[spec.name] = spec
            continue
        _warn_conflict("entity", old, spec)
        entities[spec.name] = old.model_copy(update={
            "description": old.description or spec.description,
            "iri": old.iri or spec.iri,
            "synonyms": tuple(dict.fromkeys((*old.synonyms, *spec.synonyms))),
            "parents": tuple(dict.fromkeys((*old.parents, *spec.parents))),
        })  # fmt: skip
    relations: dict[str, RelationshipTypeSpec] = {}
    for rel in (t for s in schemas for t in s.relationship_types):
        if (prior := relations.get(rel.name)) is None:
            relations[rel.name] = rel
        else:
            _warn_conflict("relationship", prior, rel)
            relations[rel.name] = prior.model_copy(update={
                "description": prior.description or rel.description, "iri": prior.iri or rel.iri,
            })  # fmt: skip
    synonyms = safe_name_synonyms([p for s in schemas for p in s.name_synonyms], "schema sources")
    return ExtractionSchema(
        entity_types=tuple(entities.values()),
        relationship_types=tuple(relations.values()),
        patterns=tuple(dict.fromkeys(p for s in schemas for p in s.patterns)),
        name_synonyms=tuple(synonyms),
    )


def _warn_conflict(kind: str, first: EntityTypeSpec | RelationshipTypeSpec,
                   other: EntityTypeSpec | RelationshipTypeSpec) -> None:  # fmt: skip
    for field in ("description", "iri"):
        mine, theirs = getattr(first, field), getattr(other, field)
        if mine and theirs and mine != theirs:
            logger.warning("schema sources define %s type %s with different %ss (%r, %r); "
                           "the first source's wins", kind, first.name, field, mine, theirs)


def safe_name_synonyms(
    pairs: Sequence[tuple[str, str]], origin: str, names: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """Return the (alias, canonical) name pairs that cannot merge two different entities.

    Names are compared as `schema_key`. Left out: an alias that is some pair's canonical
    name or one of ``names`` (SKOS: another concept's ``prefLabel``; ``IBM`` as an altLabel
    of ``IBM 701`` when ``IBM`` is a concept of its own), and an alias two pairs map to
    different canonical names. A warning names ``origin`` and the count. First occurrence's
    order.

    Args:
        pairs: (alias, canonical name) pairs.
        origin: where they came from, for the warning.
        names: the other preferred names (concepts without an alias).
    """
    canonical_keys = {schema_key(c) for _, c in pairs} | {schema_key(n) for n in names}
    claims: dict[str, set[str]] = {}
    for alias, canonical in pairs:
        claims.setdefault(schema_key(alias), set()).add(schema_key(canonical))
    out: dict[str, tuple[str, str]] = {}
    left_out: set[str] = set()
    for alias, canonical in pairs:
        key = schema_key(alias)
        if key == schema_key(canonical):
            continue
        if key in canonical_keys or len(claims[key]) > 1:
            left_out.add(key)
            continue
        out.setdefault(key, (alias, canonical))
    if left_out:
        logger.warning("%s: %d alias name(s) left out of name synonyms: each is another "
                       "entity's preferred name or claimed by two (%s)", origin, len(left_out),
                       ", ".join(sorted(left_out)[:5]))  # fmt: skip
    return list(out.values())


def document_error(exc: ValidationError, origin: str) -> str:
    """Return a one-line message for an invalid schema document: origin, field, problem.

    Args:
        exc: the validation error of `SchemaDocument`.
        origin: where the document came from (a file path, ``graph.extraction.schema_sources.0``).
    """
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return " ".join(f"{origin}: {where + ': ' if where else ''}{message}{more}".split())



_PLACEHOLDERS = regex.compile(r"\{(\w+)\}")


def _entity_line(spec: EntityTypeSpec) -> str:
    kind = f" (a kind of {', '.join(spec.parents)})" if spec.parents else ""
    return f"- {spec.name}{kind}: {spec.description}" if spec.description else \
        f"- {spec.name}{kind}"


def schema_prompt_block(schema: ExtractionSchema) -> str:
    """Return the schema as the extraction prompt shows it (``{schema_types}``).

    Lists the entity types with their descriptions (and the types each is a kind of), the
    relationship types with theirs and the allowed patterns; IRIs are left out (changing one
    re-annotates, it does not re-extract). Braces around a word are written as parentheses,
    so no text of the schema is read as a placeholder when the template is rendered.
    """
    lines = ["Schema"]
    if schema.entity_types:
        lines.append("Entity types:")
        lines += [_entity_line(t) for t in schema.entity_types]
    if schema.relationship_types:
        lines.append("Relationship types:")
        lines += [f"- {t.name}: {t.description}" if t.description else f"- {t.name}"
                  for t in schema.relationship_types]  # fmt: skip
    if schema.patterns:
        lines.append("Allowed patterns (source type, relationship type, target type):")
        lines += [f"- {s} {r} {t}" for s, r, t in schema.patterns]
    return _PLACEHOLDERS.sub(r"(\1)", "\n".join(" ".join(line.split()) for line in lines))
