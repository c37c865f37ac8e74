"""Leaf kernel: errors, hashing, registries, async helpers, logs and traces.

Imports no other layer. `log_format` (the text or JSON log handler), `correlation` (request,
query and run ids), `telemetry` (OpenTelemetry spans, a no-op without the package).
"""
