"""Description summaries: which merged descriptions need one, batching and the prompt.

Resolution (`domain.graph.resolution`) concatenates the description fragments of a merged entity or
relationship. Those over a token budget are summarized by an LLM outside the domain; when the
fragments do not fit one call, they are summarized batch by batch and the partial summaries
summarized again (map-reduce). A failed call keeps the concatenation.

Not here: the model calls and their retries (ingestion). Source: seed 000 §4.2 ("Merged
descriptions"); MS GraphRAG ``summarize_descriptions`` and LightRAG map-reduce summaries for
the idea, with a token-budget trigger instead of a fragment count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from unified_kg_rag.domain.models import Message
from unified_kg_rag.domain.prompts.render import USER_SEPARATOR, render_messages

__all__ = [
    "SUMMARY_PROMPT",
    "USER_SEPARATOR",
    "descriptions_to_summarize",
    "relationship_summary_name",
    "render_summary_messages",
    "summary_batches",
]

SUMMARY_PROMPT = "summarize_descriptions.v1"
"""Name of the packaged template (`PromptLibrary.get`; overridable)."""



def descriptions_to_summarize(
    fragments: Mapping[str, Sequence[str]],
    *,
    max_description_tokens: int,
    count: Callable[[str], int],
    min_fragments: int = 2,
) -> list[str]:
    """Return the ids whose joined description exceeds the token budget, sorted.

    Args:
        fragments: item id → its distinct description fragments
            (`ResolvedGraph.description_fragments`).
        max_description_tokens: the budget of one stored description, in tokens.
        count: a token counter (`TokenCounter.count`).
        min_fragments: fewer fragments than this are never summarized (one fragment is the
            model's own sentence, not a merge).
    """
    return sorted(
        item
        for item, parts in fragments.items()
        if len(parts) >= min_fragments and count("\n".join(parts)) > max_description_tokens
    )


def summary_batches(
    fragments: Sequence[str], *, max_input_tokens: int, count: Callable[[str], int]
) -> list[list[str]]:
    """Split fragments, in order, into batches that each fit one summary call.

    Greedy: a batch takes fragments while the sum of their counts stays within
    ``max_input_tokens``. A fragment over the limit on its own forms a batch alone (the caller
    truncates it).

    Args:
        fragments: description fragments, in the order to keep.
        max_input_tokens: tokens the fragments of one call may take (the prompt's own tokens
            excluded), ``>= 1``.
        count: a token counter (`TokenCounter.count`).

    Returns:
        Non-empty batches whose concatenation is ``fragments``; ``[]`` for no fragments.

    Raises:
        ValueError: ``max_input_tokens < 1``.
    """
    if max_input_tokens < 1:
        raise ValueError(f"max_input_tokens must be at least 1, got {max_input_tokens}")
    batches: list[list[str]] = []
    current: list[str] = []
    used = 0
    for fragment in fragments:
        size = count(fragment)
        if current and used + size > max_input_tokens:
            batches.append(current)
            current, used = [], 0
        current.append(fragment)
        used += size
    if current:
        batches.append(current)
    return batches


def relationship_summary_name(source: str, target: str, rel_type: str) -> str:
    """Return the ``{name}`` of a relationship in the summary prompt: ``"A -> B (TYPE)"``."""
    return f"{source} -> {target} ({rel_type})" if rel_type else f"{source} -> {target}"


def render_summary_messages(
    name: str, fragments: Sequence[str], *, max_words: int, template: str
) -> list[Message]:
    """Render the summary prompt for one entity or relationship.

    Placeholders ``{name}``, ``{descriptions}`` (one fragment per line, prefixed ``"- "``, its
    own line breaks folded to spaces) and ``{max_words}`` are replaced in one pass, so braces in
    a name or fragment are never read as placeholders.

    Args:
        name: the entity name, or `relationship_summary_name` for a relationship.
        fragments: the descriptions to merge.
        max_words: the word limit the summary is asked to keep.
        template: the template text in effect (``SUMMARY_PROMPT`` or its override); a line
            ``=== user ===`` splits the system part from the user part, and without it the
            whole template is one user message.

    Returns:
        ``[system, user]`` messages, or ``[user]`` when the template has no system part.
    """
    return render_messages(template, {
        "name": " ".join(name.split()),
        "descriptions": "\n".join("- " + " ".join(f.split()) for f in fragments),
        "max_words": str(max_words),
    })  # fmt: skip
