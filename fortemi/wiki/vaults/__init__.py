"""Vaults: folders of markdown notes (Obsidian, Foam, Dendron) synced into a memory.

:mod:`.files` reads a vault's files (pure functions, no I/O but :func:`~.files.scan`);
:mod:`.service` syncs them through the notes service and stores their access policies.
"""

from fortemi.wiki.vaults.files import (
    AccessFile,
    FileKind,
    VaultNote,
    VaultProblem,
    classify,
    parse_access,
    parse_note,
    scan,
    validate_path,
    validate_vault_name,
)
from fortemi.wiki.vaults.service import (
    FileOutcome,
    FileResult,
    PathRange,
    SyncReport,
    VaultFile,
    VaultService,
)

__all__ = [
    "AccessFile",
    "FileKind",
    "FileOutcome",
    "FileResult",
    "PathRange",
    "SyncReport",
    "VaultFile",
    "VaultNote",
    "VaultProblem",
    "VaultService",
    "classify",
    "parse_access",
    "parse_note",
    "scan",
    "validate_path",
    "validate_vault_name",
]
