"""The group record of a search: ``<group>.attempts.json``, written beside the attempts'
trajectories after each attempt ends (atomically, so a killed search leaves the record
of the attempts that ended), and once more, ``finished``, when the search ends.

It names every attempt (its number, seed, temperature, how the one before ended, its
outcome, its trajectory and that trajectory's seal digest), the result, and why the
search ended; its own seal is a SHA-256 over all of it (signed with a key, as a
trajectory's is), so ``four audit`` can tell a member dropped, added or edited.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from four._files import GROUP_SUFFIX, is_group_record, read_regular
from four._types import JSON
from four.trajectory._durable import write_atomic
from four.trajectory._seal import canonical

if TYPE_CHECKING:
    from four.trajectory._sign import SigningKey

FORMAT = "four.attempts/1"
SUFFIX = GROUP_SUFFIX
_DOMAIN = b"four.attempts/1\n"


def digest_of(record: Mapping[str, JSON]) -> bytes:
    """The seal's digest: SHA-256 over the record's canonical JSON, its seal left out."""
    body = {k: v for k, v in record.items() if k != "seal"}
    return hashlib.sha256(_DOMAIN + canonical(body)).digest()


def write_record(
    folder: Path, group: str, record: dict[str, JSON], key: SigningKey | None = None
) -> Path:
    """Seal ``record`` and write it whole to ``folder/<group>.attempts.json``."""
    digest = digest_of(record)
    seal: dict[str, JSON] = {"algorithm": "sha256", "digest": digest.hex()}
    if key is not None:
        seal["signer"] = key.public
        seal["signature"] = key.sign(digest)
    text = json.dumps({**record, "seal": seal}, indent=1, ensure_ascii=False) + "\n"
    write_atomic(folder, group + SUFFIX, text.encode())
    return folder / (group + SUFFIX)


def is_record(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is named as a group record is (``*.attempts.json``)."""
    return is_group_record(path)


def trajectory_seal(path: Path) -> str | None:
    """The seal digest of a sealed trajectory document (None if it has none)."""
    try:
        data = json.loads(read_regular(path))
    except (ValueError, RecursionError):  # Unreadable too: a FIFO, a device, too large
        return None
    seal = data.get("seal") if isinstance(data, dict) else None
    digest = seal.get("digest") if isinstance(seal, dict) else None
    return digest if isinstance(digest, str) else None
