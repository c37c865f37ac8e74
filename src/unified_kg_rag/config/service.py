"""Configuration of the HTTP service (``service``): keys, server-side paths, limits, logs.

Read by ``ukr serve`` at start. The defaults suit one user on loopback: no keys, no CORS,
no server-side paths, uploads up to 50 MiB a file. Source: issue 17 (security and limits),
seed 001 (the single-writer service).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ServiceConfig"]


class ServiceConfig(BaseModel):
    """The HTTP service `ukr serve` runs: who may call it, what it may read, how much."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    api_keys_file: str | None = Field(
        default=None,
        description="File of API keys (hashed, with scopes), as `ukr keys add` writes it; "
        "relative to the project directory. Empty: `.ukr/api_keys.json`. Once any key "
        "exists every call but health, version and the OpenAPI pages needs one.",
    )
    api_keys_env: str = Field(
        default="UKR_API_KEYS",
        description="Environment variable holding more keys, `KEY:SCOPE[+SCOPE]` separated "
        "by commas (e.g. `s3cret:read+write`); read at start, never logged.",
    )
    allowed_roots: list[str] = Field(
        default_factory=list,
        description="Folders whose files `POST /v1/documents/path` may index (absolute, or "
        "relative to the project directory). Empty: no server-side paths.",
    )
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Origins a browser may call the API from (CORS allow-list); empty: "
        "CORS off.",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names a server without API keys answers besides loopback ones "
        "(`localhost`, 127.0.0.0/8, ::1): a guard against DNS rebinding; `*` answers any "
        "(set by `ukr serve --insecure` on another address).",
    )
    max_upload_file_bytes: int = Field(
        default=50 * 2**20, ge=1, description="Largest uploaded file, bytes."
    )
    max_upload_files: int = Field(default=100, ge=1, description="Files per upload request.")
    max_upload_total_bytes: int = Field(
        default=200 * 2**20, ge=1, description="Largest upload request in all, bytes."
    )
    max_body_bytes: int = Field(
        default=1 * 2**20, ge=1024, description="Largest JSON request body, bytes."
    )
    max_question_chars: int = Field(
        default=20_000, ge=1, description="Longest question or chat message, characters."
    )
    max_query_string_bytes: int = Field(
        default=8 * 2**10, ge=256,
        description="Longest query string of a request URL (after `?`), bytes; longer: 414.",
    )
    metrics_refresh_s: float = Field(
        default=60.0, gt=0,
        description="Seconds between refreshes of the per-index item counts `/metrics` "
        "shows (also refreshed when a write job ends); a scrape reads only the cached counts.",
    )
    access_log: bool = Field(
        default=True,
        description="Log one line per request (method, route template, status, duration, "
        "key name, client) on the `unified_kg_rag.service.access` logger.",
    )
    log_questions: bool = Field(
        default=False,
        description="Also log the question text of queries (off: a question never reaches "
        "the logs).",
    )
