"""The error tree of unified-kg-rag: every error the library raises on purpose.

::

    UkrError                      exit 1 unless a subclass says otherwise
    ├── ConfigurationError        exit 2: bad config file, field or unknown plugin name
    ├── UsageError                exit 2: a bad argument (empty question, missing path)
    │   ├── FilterMatchesNothingError  exit 2: no passage of the index passes a query's filter
    │   ├── NotFoundError         exit 2: a named entity, community, job or document is not there
    │   └── PayloadTooLargeError  exit 2: an upload is over a configured size or count limit
    ├── ConfirmationRequiredError exit 2: a mass deletion needs --yes; nothing was written
    ├── InputError                exit 3: one input document cannot be read; names the file
    ├── StoreError                a store failed; never disguised as "no results"
    │   ├── StoreConnectionError  unreachable, locked or closed store
    │   └── StoreSchemaError      the store was written by a newer or incompatible version
    ├── ModelError                a model (LLM, embedder, reranker) call failed
    │   ├── EmbeddingModelError   the embedding model failed or does not match the index
    │   │   └── EmbeddingMismatchError  exit 2: the index was built with another model
    │   ├── ModelIntegrityError   a bundled model file does not have its pinned hash
    │   ├── ModelOutputError      a model's reply is not in the format its prompt asked for
    │   └── QueryDeadlineError    a query's deadline passed before a model call finished
    ├── MethodologyNotIndexedError  a strategy needs what the index does not hold
    ├── JobConflictError          exit 2: a job of the service already writes the index
    └── IndexingInterruptedError  exit 130: a run was stopped; the next run resumes it

Nothing else belongs here: no I/O, no formatting of output.
"""

from __future__ import annotations

__all__ = [
    "BuildInProgress",
    "ConfigurationError",
    "ConfirmationRequiredError",
    "EmbeddingMismatchError",
    "EmbeddingModelError",
    "FilterMatchesNothingError",
    "IndexBusyError",
    "IndexingInterruptedError",
    "InputError",
    "JobConflictError",
    "LeaseLostError",
    "MethodologyNotIndexedError",
    "ModelError",
    "ModelIntegrityError",
    "ModelOutputError",
    "NotFoundError",
    "PayloadTooLargeError",
    "QueryDeadlineError",
    "StoreConnectionError",
    "StoreError",
    "StoreSchemaError",
    "StoreTimeoutError",
    "UkrError",
    "UsageError",
]


class UkrError(Exception):
    """Root of every error raised on purpose by unified-kg-rag.

    Attributes:
        exit_code: the process exit code the CLI maps this error to.
    """

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigurationError(UkrError):
    """The configuration is invalid: a field has a bad value or names an unknown plugin.

    Attributes:
        field: dotted path of the offending field (``llm.openai.base_url``), if known.
        source: the file or environment variable the value came from, if known.
    """

    exit_code = 2

    def __init__(
        self, message: str, *, field: str | None = None, source: str | None = None
    ) -> None:
        parts = [p for p in (source, field) if p]
        super().__init__(f"{': '.join(parts)}: {message}" if parts else message)
        self.field = field
        self.source = source


class UsageError(UkrError):
    """A bad argument: an empty question, a path that does not exist, an unknown option value.

    Attributes:
        field: the argument or request field at fault.
    """

    exit_code = 2

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


class FilterMatchesNothingError(UsageError):
    """No passage of the index passes a query's filters, so nothing can be retrieved.

    Raised instead of answering "cannot answer": the filter, not the question, is at fault
    (a path in another form, a typo, a document that failed to index).

    Attributes:
        filters: the filters as given (field → value or values).
    """

    def __init__(self, message: str, *, filters: dict[str, object]) -> None:
        super().__init__(message, field="filters")
        self.filters = filters


class NotFoundError(UsageError):
    """A request names an item that is not there (the service answers 404).

    The item: an entity, a concept, a community, a job or a document.

    Attributes:
        kind: what was looked for (``entity``, ``concept``, ``community``), when known.
        key: the id or label asked for, when known.
    """

    def __init__(
        self, message: str, *, kind: str = "", key: str = "", field: str | None = None
    ) -> None:
        super().__init__(message, field=field)
        self.kind = kind
        self.key = key


class PayloadTooLargeError(UsageError):
    """An upload is over a limit of ``service`` (file size, file count, total bytes).

    Raised while the upload streams in, before the rest of it is read; what was received is
    removed (the service answers 413).
    """


class ConfirmationRequiredError(UkrError):
    """A run would delete many documents at once and was not told to (``--yes``).

    Raised before anything is written: a folder that is suddenly empty (unmounted, moved) or
    that lost more than ``indexing.max_delete_share`` of its documents looks like a mistake.

    Attributes:
        index: the index.
        would_delete: how many documents the run would delete.
        of: how many documents the judged scope holds.
    """

    exit_code = 2

    def __init__(self, message: str, *, index: str, would_delete: int, of: int) -> None:
        super().__init__(message)
        self.index = index
        self.would_delete = would_delete
        self.of = of


class InputError(UkrError):
    """One input document cannot be read or parsed. Only that document fails.

    Attributes:
        path: the file at fault, as the user gave or the walk found it.
    """

    exit_code = 3

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class StoreError(UkrError):
    """A store (SQLite, PostgreSQL) failed to read or write."""


class StoreConnectionError(StoreError):
    """The store cannot be reached, is locked past the timeout, or was closed."""


class StoreSchemaError(StoreError):
    """The store's schema is newer than this code or otherwise incompatible."""


class LeaseLostError(StoreError):
    """A run no longer holds its index's write lease (it lapsed and was taken or released)."""


class StoreTimeoutError(StoreError):
    """A store statement ran past its configured timeout and was cancelled."""


class ModelError(UkrError):
    """A model call failed.

    Attributes:
        transient: True for errors worth retrying (timeouts, HTTP 408/429/5xx, dropped connections).
        status_code: the HTTP status, when the provider gave one.
    """

    def __init__(
        self, message: str, *, transient: bool = False, status_code: int | None = None
    ) -> None:
        super().__init__(message)
        self.transient = transient
        self.status_code = status_code


class EmbeddingModelError(ModelError):
    """The embedding model failed, or differs from the model the index was built with."""


class EmbeddingMismatchError(EmbeddingModelError):
    """The configured embedding model differs from the one the index was built with.

    A configuration problem (exit 2): vectors of two models are not comparable, so the index
    refuses to mix them instead of returning meaningless neighbours.
    """

    exit_code = 2


class ModelIntegrityError(ModelError):
    """A bundled model file's SHA-256 differs from the pinned value; the model is not loaded."""


class ModelOutputError(ModelError):
    """A model answered, but its reply cannot be read: empty, or not in the asked-for format.

    Not transient: the same prompt would most likely get the same reply, so only that item
    fails (it is asked again on the next run).

    Attributes:
        reason: one line saying what is wrong with the reply.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason, transient=False)
        self.reason = reason


class QueryDeadlineError(ModelError):
    """The query's deadline (``query.deadline_s``) passed before a model call finished.

    Not transient (retrying cannot give back the time), not fatal: the step that made the
    call falls back as for any failed model call, and the query returns what it has.

    Attributes:
        deadline_s: the query's deadline, seconds.
    """

    def __init__(self, message: str, *, deadline_s: float) -> None:
        super().__init__(message, transient=False)
        self.deadline_s = deadline_s


class MethodologyNotIndexedError(UkrError):
    """A strategy needs a methodology the index does not hold.

    Attributes:
        index: the index name.
        held: the methodologies the index holds.
    """

    exit_code = 2

    def __init__(self, message: str, *, index: str, held: tuple[str, ...]) -> None:
        super().__init__(message)
        self.index = index
        self.held = held


class BuildInProgress(UkrError):  # noqa: N818 (the issue's name for it)
    """Another run holds the index's single-writer lease (a second concurrent ``ukr index``).

    Raised at once, before anything is read or written, so a caller (a CLI, a service route)
    refuses the second build instead of queueing it behind a build that may take hours.
    Queries take no lease and are answered while a build runs.

    Attributes:
        index: the index.
        holder: the lease holder (``host:pid:run-id``).
        expires_in_s: seconds until the holder's lease lapses unless renewed.
    """

    exit_code = 2

    def __init__(self, index: str, holder: str, expires_in_s: float) -> None:
        super().__init__(
            f"index {index!r} is being written by {holder} (its lease lapses in "
            f"{max(expires_in_s, 0):.0f} s unless renewed); wait for that run to finish. If it "
            "died, its lease lapses on its own and the next run repairs what it left"
        )
        self.index = index
        self.holder = holder
        self.expires_in_s = expires_in_s


class JobConflictError(UkrError):
    """A job of the service already writes the index (one index, delete or reset job each).

    Attributes:
        index: the index.
        job_id: the job that holds it.
    """

    exit_code = 2

    def __init__(self, index: str, job_id: str, kind: str) -> None:
        super().__init__(
            f"index {index!r} is being written by job {job_id} ({kind}); wait for it to end "
            f"(GET /v1/jobs/{job_id}) or cancel it (POST /v1/jobs/{job_id}/cancel)"
        )
        self.index = index
        self.job_id = job_id


IndexBusyError = BuildInProgress
"""The former name of `BuildInProgress` (kept for callers written against it)."""


class IndexingInterruptedError(UkrError):
    """An indexing run was interrupted; what was stored is kept and the next run resumes."""

    exit_code = 130
