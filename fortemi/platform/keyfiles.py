"""Private key files in the data directory, created once and shared by every process.

The embedded default keeps its keys (the local issuer's signing key, the key that seals
stored secrets) in ``FORTEMI_HOME``, so a second terminal's ``fortemi worker`` and a
restarted server use the same ones.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

__all__ = ["load_or_create"]


def load_or_create(path: Path, make: Callable[[], bytes]) -> bytes:
    """The bytes of ``path``; on first use, ``make()`` written there (0600, 0700 folder).

    Written whole under a private name, then linked into place: the link fails if the file
    appeared meanwhile, so two first starts agree on one key and nobody ever reads a
    half-written file.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # mkdir's mode is filtered by the umask and ignored for an existing directory.
    path.parent.chmod(0o700)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    content = make()
    staging = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with open(fd, "wb") as file:
            os.fchmod(file.fileno(), 0o600)  # exactly 0600, whatever the umask
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(staging, path)
        except FileExistsError:
            return path.read_bytes()
    finally:
        staging.unlink(missing_ok=True)
    return content
