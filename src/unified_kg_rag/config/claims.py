"""Configuration of claim (covariate) extraction: the ``graph.claims`` section.

Claims are Microsoft GraphRAG's covariates: per text unit, the dated statements the text makes
about its own entities (subject, object, type, status TRUE/FALSE/SUSPECTED, start and end
dates, description, source text). Off by default (seed 000 §4, stages 8-9): with claims off no
claim call is made and no prompt, report context or search output changes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["DEFAULT_CLAIM_DESCRIPTION", "ClaimsConfig"]

DEFAULT_CLAIM_DESCRIPTION = (
    "Any claims or facts that could be relevant to information discovery: what an entity did, "
    "was accused of, announced, owns, signed, was found to have done, or is said to be."
)
"""The claim description of Microsoft GraphRAG's default claim extraction, reworded."""


class ClaimsConfig(BaseModel):
    """Claim (covariate) extraction per text unit (needs a graph methodology, e.g. ``graphrag``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    enabled: bool = Field(
        default=False,
        description="Extract claims about each text unit's own entities (one extra model call "
        "per text unit with entities; its record is stored, so a re-run asks nothing again). "
        "Claims go to the `claims` search collection, the community report context and "
        "`local` search.",
    )
    description: str = Field(
        default=DEFAULT_CLAIM_DESCRIPTION,
        min_length=1,
        description="What counts as a claim (`{claim_description}` in the prompt).",
    )
    claim_types: list[str] = Field(
        default_factory=list,
        description="Claim types the prompt suggests (`{claim_types}`), e.g. `FRAUD`, "
        "`ACQUISITION`; empty lets the model name the type.",
    )
    max_per_unit: int = Field(
        default=20,
        ge=1,
        le=200,
        description="Claims kept per text unit at most (the first ones of the reply).",
    )
    max_reply_tokens: int = Field(
        default=2048,
        ge=64,
        description="Longest claim reply, in tokens. A cut reply keeps its complete claims "
        "for this run and is asked again by the next.",
    )
    prompt_file: str | None = Field(
        default=None,
        description="A file replacing the claim prompt `extract_claims` (relative to the "
        "project directory; the same as `prompts.files.extract_claims`): system part, a line "
        "`=== user ===`, user part. `{text}` and `{entity_names}` are required; "
        "`{claim_description}` and `{claim_types}` are filled in where written. Changing it "
        "asks every unit again.",
    )

    @field_validator("claim_types")
    @classmethod
    def _types(cls, value: list[str]) -> list[str]:
        out = list(dict.fromkeys("_".join(t.upper().split()) for t in value if t.strip()))
        return out
