"""Evaluation: datasets, metrics, comparison runs, LLM judges, statistics and reports.

Drives the application API (the chain, through `app.EvalApp`), never an adapter.

Module map:

- `dataset` — the dataset format (`EvalItem`, `Assertion`) and `load_dataset`.
- `prepare`, `datasets/` — converters of public sets (HippoRAG layouts, GraphRAG-Bench with
  evidence located by `datasets.locate`, MultiHop-RAG, your own JSON Lines); `autoq`,
  `autoq_sampling` — questions and assertions generated from a corpus (AutoQ-style).
- `metrics`, `abstention` — LLM-free per-query metrics and abstention statistics.
- `results` — what a run saves (`ResultRow`, `JudgementRow`, `RunManifest`, JSONL I/O).
- `scoring` — a saved row's metrics (pure); `comparison` — the paired comparison (pure);
  `statistics` — bootstrap intervals; `gates` — ``--fail-if``.
- `compare` — comparison runs, resume and re-scoring; `closed_book` — the closed-book arm;
  `judging`, `judges/` — the LLM judges (correctness, pairwise, assertions).
- `report`, `report_tables`, `report_figures`, `report_render` — ``ukr eval report``.
- `runner` — the one-strategy `evaluate` the benchmarks use.
"""
