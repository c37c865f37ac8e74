"""The ``indexing.cluster`` value: where `ukr index` sends its model work (Ray).

Pure string checks, shared by the configuration model and the ``--cluster`` option, so
both reject the same values with the same words. Connecting is the Ray adapter's job
(`adapters.ray.cluster`).
"""

from __future__ import annotations

import re

__all__ = ["CLUSTER_FORMS", "check_cluster_address"]

CLUSTER_FORMS = "`ray://HOST:PORT` (Ray Client), `HOST:PORT` (a cluster's GCS address) or `auto`"
"""The accepted forms, as error messages and help texts name them."""

_HOST_PORT = re.compile(r"^(?P<host>[A-Za-z0-9._-]+|\[[0-9A-Fa-f:]+\]):(?P<port>[0-9]{1,5})$")


def check_cluster_address(value: str) -> str:
    """Return ``value`` stripped when it is a cluster address, else raise.

    Accepted: ``auto`` (``ray.init()``: the cluster this machine runs, or a new local one in
    the process), ``ray://HOST:PORT`` and ``HOST:PORT`` with a port in 1-65535.

    Raises:
        ValueError: any other value (one line naming the accepted forms).
    """
    text = value.strip()
    if text == "auto":
        return text
    rest = text.removeprefix("ray://")
    match = _HOST_PORT.match(rest)
    if match is None or not 0 < int(match.group("port")) < 65536:
        raise ValueError(f"{value!r} is not a cluster address; use {CLUSTER_FORMS}")
    return text
