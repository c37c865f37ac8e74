"""Sending a test server's reply body slowly: a few bytes at a time (deadline tests).

The headers go at once; the body goes ``step`` bytes at a time with ``interval_s`` between
pieces, after its first ``free_bytes`` bytes, which go at once (a stream's first deltas, say).
"""

from __future__ import annotations

import time
from typing import BinaryIO

__all__ = ["write_trickled"]


def write_trickled(
    out: BinaryIO, data: bytes, *, interval_s: float, step: int = 1, free_bytes: int = 0
) -> int:
    """Write ``data`` to ``out`` (flushing each piece); return the number of bytes written.

    Args:
        out: the handler's ``wfile``.
        data: the body bytes to send now.
        interval_s: seconds between pieces; 0 or less sends ``data`` at once.
        step: bytes per trickled piece (at least 1).
        free_bytes: how many of ``data``'s first bytes go at once, before the trickle.
    """
    if interval_s <= 0:
        out.write(data)
        return len(data)
    free = max(0, min(free_bytes, len(data)))
    pieces = [data[:free]] if free else []
    step = max(1, step)
    pieces += [data[i:i + step] for i in range(free, len(data), step)]
    for n, piece in enumerate(pieces):
        if piece and (n or not free):
            time.sleep(interval_s)
        out.write(piece)
        out.flush()
    return len(data)
