"""Message archives as documents: normalized messages, transcripts, manifest, evidence.

Not here: reading an archive's file (`adapters/messages`) or indexing it (`ingestion`).
"""
