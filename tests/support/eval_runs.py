"""What the `ukr eval` comparison tests share: the CLI without the caller's ``UKR_`` variables,
and the MuSiQue-shaped set of tests/cli/test_eval.py prepared and indexed (no LLM)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import Result
from typer.testing import CliRunner

from tests.cli.test_eval import CORPUS, QUESTIONS
from unified_kg_rag.cli.app import app


def invoke(args: list[str]) -> Result:
    """Run ``ukr ARGS`` without the caller's ``UKR_`` variables."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.upper().startswith("UKR_")}
    return CliRunner().invoke(app, args, env=env)


def prepare_and_index(tmp: Path) -> tuple[Path, Path]:
    """Return ``(dataset.jsonl, project)``: the set prepared and indexed under ``tmp``."""
    (tmp / "q.json").write_text(json.dumps(QUESTIONS), "utf-8")
    (tmp / "c.json").write_text(json.dumps(CORPUS), "utf-8")
    prep = invoke(["eval", "prepare", "hipporag", str(tmp / "q.json"), str(tmp / "c.json"),
                   "--out", str(tmp / "data")])  # fmt: skip
    assert prep.exit_code == 0, prep.output
    index = invoke(["index", str(tmp / "data" / "corpus"), "-C", str(tmp / "proj"), "-q"])
    assert index.exit_code == 0, index.output
    return tmp / "data" / "dataset.jsonl", tmp / "proj"
