"""Message sources: chat archives read into normalized `SourceMessage` records.

Importing this package registers the built-in sources into `MESSAGE_SOURCES` (the only
import-time effect; pytypedstream loads when a blob is first decoded). Sources are tried in
registration order, the first whose ``matches`` accepts a file parses it
(`find_message_source`); ``--source NAME`` forces one. Every source implements
`unified_kg_rag.ports.MessageSource`: ``matches`` never raises, ``parse`` raises a one-line
`InputError` naming the file, and no source ever writes its input.

============  ==============================  ================================================
name          files                           source
============  ==============================  ================================================
``imessage``  macOS ``chat.db``, iOS          `IMessageSource`: SQLite opened read-only; both
              ``sms.db`` (any name: matched   Apple date eras, ``attributedBody`` bodies,
              by its tables)                  tapbacks folded, unnamed groups named by people
``jsonl``     ``*.jsonl``, ``*.ndjson`` whose `JsonLinesSource`: the documented generic
              first record has ``thread_id``  format (one JSON message per line) that any
              and ``text``                    exporter (WhatsApp, Slack, Signal) can write
============  ==============================  ================================================
"""

from __future__ import annotations

from unified_kg_rag.adapters.messages.dispatch import find_message_source, load_message_sources
from unified_kg_rag.adapters.messages.imessage import IMessageSource
from unified_kg_rag.adapters.messages.jsonl import JsonLinesSource
from unified_kg_rag.adapters.messages.typedstream_body import decode_attributed_body
from unified_kg_rag.adapters.registry import MESSAGE_SOURCES, MessageSourceLoader

__all__ = [
    "IMessageSource",
    "JsonLinesSource",
    "decode_attributed_body",
    "find_message_source",
    "load_message_sources",
]

_BUILT_IN: dict[str, MessageSourceLoader] = {
    "imessage": IMessageSource,
    "jsonl": JsonLinesSource,
}

for _name, _loader in _BUILT_IN.items():
    if _name not in MESSAGE_SOURCES:
        MESSAGE_SOURCES.register(_name, _loader)
