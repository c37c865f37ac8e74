"""Retry delays shared by the model adapters: exponential backoff with random jitter.

Source: "Exponential Backoff And Jitter" (AWS Architecture Blog, M. Brooker, 2015): spreading
retries randomly keeps many clients that failed together from retrying together.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tenacity import RetryCallState

__all__ = ["backoff_wait"]


def backoff_wait(initial_s: float, max_s: float) -> Callable[[RetryCallState], float]:
    """Return a tenacity ``wait`` giving ``initial_s * 2**(n - 1) + U(0, initial_s)`` seconds.

    Args:
        initial_s: the delay before the first retry (``n = 1``), seconds; 0 retries at once.
        max_s: the longest delay, seconds.
    """

    def wait(state: RetryCallState) -> float:
        n = max(state.attempt_number, 1)
        delay = initial_s * 2.0 ** min(n - 1, 62) + random.uniform(0.0, initial_s)
        return max(0.0, min(delay, max_s))

    return wait
