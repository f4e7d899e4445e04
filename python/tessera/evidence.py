"""Evidence packets from Python: what `tessera evidence verify` says of a
packet, and the performance table the README shows (docs/evidence.md).

    from tessera import evidence
    v = evidence.verify("bench/evidence/cpu/reduce.packet.json")
    v.verdict            # "fresh", "stale", "unsealed", "tampered" or "invalid"
    v.packet["cases"]    # the measurements, as recorded
"""
from __future__ import annotations

import json
import os
from typing import Any, NamedTuple, Optional

from . import _core

__all__ = ["Verification", "verify", "headline_table", "source_fingerprint"]


class Verification(NamedTuple):
    """A packet's verdict (``exit_code`` as the CLI's), why, and its content (None if it cannot be read)."""

    verdict: str
    exit_code: int
    detail: str
    packet: Optional[Any]


def verify(path: "os.PathLike[str] | str", *, source_root: Optional[str] = None,
           public_key: Optional[str] = None) -> Verification:
    """Verifies one packet: intact, and fresh against the sources of `source_root` (default: the tree
    around the working directory); with `public_key` (a PEM file) its signature must be by that key."""
    path = os.fspath(path)
    verdict, code, detail = _core.verify_packet(path, source_root or "", public_key or "")
    try:
        with open(path, encoding="utf-8") as f:
            packet = json.load(f)
    except (OSError, ValueError):
        packet = None
    return Verification(verdict, code, detail, packet)


def headline_table(directory: "os.PathLike[str] | str", *, source_root: Optional[str] = None) -> str:
    """The README's performance table (markdown) from the packets under `directory`."""
    return _core.headline_table(os.fspath(directory), source_root or "")


def source_fingerprint(source_root: Optional[str] = None) -> str:
    """The fingerprint of a source tree, as packets record it (freshness compares the two)."""
    return _core.source_fingerprint(source_root or "")
