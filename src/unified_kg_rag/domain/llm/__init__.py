"""Model calls' pure parts: response-cache scopes, usage metering, reading JSON replies.

The wrappers that make the calls live in `adapters/llm`; this package holds what they and the
application share without importing an SDK.
"""
