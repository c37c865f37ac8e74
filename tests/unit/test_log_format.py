"""JSON log lines and the correlation ids they carry (issue 22, observability)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest

from unified_kg_rag.domain.ranking.signals import WeightedScorer
from unified_kg_rag.retrieval.pipeline import Candidate, Pipeline, StageInput, StageOutput
from unified_kg_rag.util.correlation import (
    as_query,
    current_ids,
    query_id,
    query_scope,
    request_scope,
    run_scope,
    valid_id,
)
from unified_kg_rag.util.log_format import configure_logging

pytestmark = pytest.mark.unit

logger = logging.getLogger("unified_kg_rag.tests.log_format")


class Seed:
    """Adds candidates after yielding to the loop (so two queries interleave)."""

    name = "semantic"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        await asyncio.sleep(0.01)
        logger.info("seeding for %s", stage_input.query)
        return StageOutput([Candidate(f"{stage_input.query}-{i}", signals={"semantic": 0.5})
                            for i in range(3)])  # fmt: skip


class Trim:
    name = "trim"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        await asyncio.sleep(0.01)
        return StageOutput(stage_input.candidates[:1])


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """The root logger writing JSON lines at DEBUG into a buffer; restored afterwards."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    buffer = io.StringIO()
    configure_logging(logging.DEBUG, "json", stream=buffer)
    try:
        yield buffer
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])


def records(buffer: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_each_line_is_one_json_object_with_time_level_logger_message(lines: io.StringIO) -> None:
    logger.warning("disk at %d%%", 91, extra={"volume": "/data"})
    (line,) = records(lines)
    assert line["level"] == "WARNING" and line["logger"] == "unified_kg_rag.tests.log_format"
    assert line["message"] == "disk at 91%" and line["volume"] == "/data"
    assert str(line["time"]).endswith("+00:00")  # ISO 8601, UTC
    assert "query_id" not in line and "run_id" not in line  # outside any scope


def test_two_concurrent_queries_log_under_two_ids(lines: io.StringIO) -> None:
    pipeline = Pipeline([Seed(), Trim()], WeightedScorer({"semantic": 1.0}))
    seen: dict[str, str | None] = {}

    async def ask(question: str) -> None:
        async def main() -> None:
            seen[question] = query_id()
            await pipeline.execute(question)

        await as_query(main)()

    async def both() -> None:
        await asyncio.gather(ask("owls"), ask("bats"))

    asyncio.run(both())
    logged = [r for r in records(lines) if str(r["logger"]).startswith("unified_kg_rag")]
    by_query: dict[object, list[dict[str, object]]] = {}
    for line in logged:
        by_query.setdefault(line.get("query_id"), []).append(line)
    assert set(by_query) == {seen["owls"], seen["bats"]} and seen["owls"] != seen["bats"]
    for question in ("owls", "bats"):
        mine = by_query[seen[question]]
        # 2 stages × (started, done) + the stage's own record
        assert len(mine) == 5
        seeded = [r for r in mine if str(r["message"]).startswith("seeding")]
        assert seeded[0]["message"] == f"seeding for {question}"
        assert [r["stage"] for r in mine if "duration_ms" in r] == ["semantic", "trim"]
    # the two queries interleaved: their lines alternate somewhere, yet none was mislabelled
    order = [line["query_id"] for line in logged]
    assert order != sorted(order, key=order.index)


def test_a_query_inside_a_request_is_named_by_the_request_id() -> None:
    with request_scope("req-42"), query_scope() as outer, query_scope("other") as inner:
        assert outer == inner == "req-42"
        assert current_ids() == {"request_id": "req-42", "query_id": "req-42"}
    with query_scope() as fresh:
        assert len(fresh) == 32 and int(fresh, 16) >= 0
    assert current_ids() == {}
    with run_scope("job-7"), run_scope() as nested:
        assert nested == "job-7"


def test_index_run_lines_carry_the_run_id(lines: io.StringIO) -> None:
    with run_scope() as run:
        logger.info("hashing")
    logger.info("after")
    inside, after = records(lines)
    assert inside["run_id"] == run and "run_id" not in after


def test_a_client_request_id_is_kept_only_when_it_is_a_plain_token() -> None:
    assert valid_id("9f1c-4a:b.c_d") == "9f1c-4a:b.c_d"
    for bad in ("", "two words", "line\nbreak", "x" * 129, '"quoted"', None):
        assert valid_id(bad) is None


def test_text_format_is_unchanged(lines: io.StringIO) -> None:
    buffer = io.StringIO()
    configure_logging(logging.INFO, "text", stream=buffer)
    with query_scope():
        logger.info("plain")
    assert buffer.getvalue() == "INFO unified_kg_rag.tests.log_format: plain\n"


def test_uvicorn_colour_copies_are_left_out(
    lines: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a service test earlier in the run may have let uvicorn configure its loggers (its own
    # handler, no propagation); `ukr serve --log-json` hands them to the root as here
    for name in ("uvicorn", "uvicorn.error"):
        configured = logging.getLogger(name)
        monkeypatch.setattr(configured, "propagate", True)
        monkeypatch.setattr(configured, "disabled", False)
        monkeypatch.setattr(configured, "handlers", [])
        monkeypatch.setattr(configured, "level", logging.NOTSET)
    logging.getLogger("uvicorn.error").warning("Started server process [%d]", 7,
                          extra={"color_message": "\x1b[36m%d\x1b[0m"})
    (line,) = records(lines)
    assert line["message"] == "Started server process [7]" and "color_message" not in line
