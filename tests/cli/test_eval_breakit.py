"""Inputs a demanding user throws at ``ukr eval``: odd datasets, strategy lists, run folders,
gates and saved files. Each test pins one defect found by trying to break the framework."""

from __future__ import annotations

from pathlib import Path

import pytest

from unified_kg_rag.evaluation.dataset import load_dataset
from unified_kg_rag.util.errors import UsageError


def _write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- datasets


def test_a_duplicate_id_is_refused_with_both_lines(tmp_path: Path) -> None:
    # rows are keyed by question id: the second question's answers would overwrite the first's
    path = _write(tmp_path / "d.jsonl", '{"id": "a", "question": "One?"}', "",
                  '{"id": "a", "question": "Two?"}')  # fmt: skip
    with pytest.raises(UsageError) as exc:
        load_dataset(path)
    assert str(exc.value) == f"{path}:3: id: 'a' is also the id of line 1; ids must be unique"


def test_a_default_id_that_collides_with_a_given_one_is_refused(tmp_path: Path) -> None:
    # line 1 has no id, so it is "1"; line 2 names id 1 (a number, read as "1")
    path = _write(tmp_path / "d.jsonl", '{"question": "One?"}', '{"id": 1, "question": "Two?"}')
    with pytest.raises(UsageError, match=r"d\.jsonl:2: id: '1' is also the id of line 1"):
        load_dataset(path)


def test_a_line_that_is_not_an_object_says_so(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", '["question", "One?"]')
    with pytest.raises(UsageError) as exc:
        load_dataset(path)
    assert str(exc.value) == f"{path}:1: not a JSON object (a list); expected {{\"question\": ...}}"
