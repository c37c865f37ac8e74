"""Configuration of message archives (``messages``): naming people, rendering transcripts.

Source: seed 004 (ADR-017: the 8,000-character transcript cap and the owner label) and seed
001 (the handle → name map). `ukr index --handles/--owner/--source/--since/--message-limit`
override these per run.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["MessagesConfig"]


class MessagesConfig(BaseModel):
    """How message archives (iMessage ``chat.db``, JSON Lines) become transcripts."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    owner_label: str = Field(
        default="Me", min_length=1,
        description="Display name of the archive's owner (messages sent from this device).",
    )
    handles_file: str | None = Field(
        default=None,
        description="YAML file mapping handles (phone numbers, e-mail addresses) to display "
        "names; relative to the project directory. `ukr index --handles FILE` overrides it.",
    )
    handle_names: dict[str, str] = Field(
        default_factory=dict,
        description="Handle → display name, inline (the handles file's entries win).",
    )
    transcript_max_chars: int = Field(
        default=8000, ge=200,
        description="Size target of one transcript document: consecutive days of a thread "
        "are packed until the next would pass it (a day is never split).",
    )
    timezone: str = Field(
        default="UTC",
        description="IANA time zone of the rendered times, of day boundaries, and of JSON "
        "Lines timestamps written without an offset (`Europe/Berlin` ...). Changing it "
        "re-renders the transcripts whose text it changes.",
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        if value.upper() == "UTC":
            return "UTC"
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value
