"""Pure models and algorithms of unified-kg-rag, grouped by concept.

No I/O library, model SDK or database driver is imported here (an import-linter contract).

Module map (new code goes in the room of its concept):

- `models` — pydantic domain models: documents, text units, graph items, sources, answers.
- `identity` — identity keys and content-derived ids (DESIGN.md §4).
- `text/` — `analysis` (lexical terms, sentences, paragraphs), `tokens` (token estimates,
  grapheme-safe cuts), `chunking` (text units), `embedding_input` (what the embedder reads),
  `decoding` (lenient UTF-8, escaped display of names that are not UTF-8), `sentences`
  (sentences for extractive answers), `shapes` (headings, boilerplate, record lines),
  `unit_times` (a text unit's time fields: its messages' send times, a document's stated
  date or file time).
- `llm/` — `cache_control` (response-cache scopes), `usage` (metering scopes), `json_reply`
  (the JSON object of a reply), `roles` (the roles a chat model plays, `RoleModels`),
  `exchange` (`Message`, `Completion`, `TokenUsage`; re-exported by `models`).
- `extraction/` — `records` (extraction records), `format` (prompt messages, reply parsing),
  `xml_records` (lenient XML record reader and its escaping), `grounding` (span grounding and
  the confidence thresholds that shape a record before resolution), `schema` (the extraction
  schema: types, patterns, synonyms, the schema file's shape, merging sources),
  `schema_conformance` (strict/align/open per unit, name alignment, the LLM alignment
  prompt's reply, the conformance report, `in_schema`/IRI annotations), `claims` (claim
  records, the claim prompt's messages, claim replies, statuses), `claim_dates` (claim dates
  to ISO-8601).
- `graph/` — `resolution` (records → one graph), `name_matching`, `summaries` (description
  summaries), `communities` (hierarchical Leiden), `report_context`, `reports` (community
  reports), `membership` (the communities selected entities belong to, ranked), `item_text`
  (how entities and relationships read as text), `claims` (claims resolved against the
  graph: `Claim`, its search record and text).
- `concepts/` — `graph` (the ``lazy`` concept graph), `text` (keyphrases, concept keys),
  `cooccurrence` (co-occurrence edges).
- `ranking/` — `fusion` (weighted RRF), `mmr`, `ppr` (personalized PageRank), `budget`
  (token-budget packing), `bridge` (`iterative`'s bridge terms from retrieved passages),
  `signals` (the staged pipeline's named signals and `WeightedScorer`), `trace` (a pipeline
  run's figures and ranking as an answer reports them), `centrality` (global PageRank of a
  graph's nodes and of the text units they cite).
- `answers/` — `extractive`, `match` (the weak-match verdict), `citations`, `abstention`,
  `global_map` (global search's steps).
- `messages/` — `source` (messages as a source hands them over), `transcripts` (merging,
  thread-day transcripts), `manifest`
  (transcript units, manifest diff, stored spans), `evidence` (per-message provenance),
  `ref` (`MessageRef`).
- `index/` — `delta` (corpus vs doc registry), `write_lease` (the single-writer rule),
  `meta` (facts an index records about itself, the stored PageRank's layout), `attempts`
  (consecutive failures, quarantine), `paths` (the one form of a document path, from the
  forms users type), `methodologies` (the registered methodology profiles: what each
  builds, its stage).
- `tree/` — the RAPTOR summary tree: `nodes` (`SummaryNode`, `SummaryTree`), `clustering`
  (one level's clusters), `extractive` (LLM-free summaries, input keys), `lineage`.
- `prompts/` — the prompt templates (Markdown files, versioned by name), `render` (the one
  template mechanism: placeholders, the system/user split, filling), `library` (the prompts
  in effect: packaged texts and the user's checked overrides) and `tuning` (prompt tuning's
  sample, corpus profile, adapted prompts and draft schema).
"""
