"""The ``query.access`` section: recording how often each item is retrieved (opt-in).

The counts feed the staged pipeline's ``access`` stage (seed 002 "Access Count"). Recording
happens off the query's path: see `retrieval.access.AccessRecorder`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AccessConfig"]


class AccessConfig(BaseModel):
    """Access counts: which retrieved items are counted, and how they are written."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    record: bool = Field(
        default=False,
        description="Count each retrieval: every source a query returns (text units, and "
        "the entities, relationships, reports, claims, summary nodes and concepts among "
        "them, whatever the strategy) and every result of a staged pipeline adds 1 to that "
        "item's count in the index's access log, which the pipeline's `access` stage reads. "
        "Written in the background after the query's results are known, by one writer per "
        "index: a query never waits for it and never fails because of it (a failed write "
        "is logged as one warning and its counts stay queued for the next try). Off: "
        "nothing is written.",
    )
    flush_interval_s: float = Field(
        default=0.5,
        gt=0,
        le=3600,
        description="How long the writer gathers counts before it writes them in one "
        "transaction, seconds (and the least wait before it retries after a failure). "
        "Closing the app (the end of `ukr query`, a stopped service) writes what is queued.",
    )
    max_pending: int = Field(
        default=100_000,
        ge=1,
        description="Most distinct items whose counts may wait to be written. While the "
        "store cannot be written (a locked or unreachable database), counts of further "
        "items are dropped past this bound, with a warning, so memory stays bounded.",
    )
