"""Reading a shard archive safely, as a stream.

Only regular members are read: a link, device, directory or FIFO is refused, and so is a
name that is not the manifest or a path the manifest lists (no ``..``, no absolute path:
nothing is ever extracted to disk anyway). The manifest must come first; every component
must then appear once, in the manifest's order, within the size limits, and hash to the
manifest's SHA-256 with the rows it declares. A truncated or corrupt archive is
``shard_truncated``; nothing here writes anywhere.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from fortemi.documents.shards.components import component_named
from fortemi.documents.shards.manifest import (
    MANIFEST_NAME,
    MAX_MANIFEST_BYTES,
    ComponentEntry,
    Manifest,
    parse_manifest,
    refused,
)

__all__ = ["ENCRYPTED_MAGIC", "Limits", "Row", "ShardReader"]

ENCRYPTED_MAGIC = b"MMPKE01\n"  # an MMPKE01 file's first bytes (fortemi.crypto)


@dataclass(frozen=True, slots=True)
class Limits:
    """What an import accepts; past any of them the shard is refused (``shard_too_large``)."""

    max_member_bytes: int = 16 * 1024**3
    max_total_bytes: int = 64 * 1024**3
    max_line_bytes: int = 256 * 1024**2


@dataclass(frozen=True, slots=True)
class Row:
    component: str
    table: str
    values: dict[str, Any]


class ShardReader:
    """One pass over a shard file: :meth:`rows` yields every row, checked, after the
    manifest (:attr:`manifest`, read by :meth:`open`)."""

    def __init__(self, path: Path, limits: Limits) -> None:
        self._path = path
        self._limits = limits
        self._file: IO[bytes] | None = None
        self._tar: tarfile.TarFile | None = None
        self.manifest: Manifest | None = None

    def __enter__(self) -> ShardReader:
        try:
            self._file = self._path.open("rb")
            if self._file.read(len(ENCRYPTED_MAGIC)) == ENCRYPTED_MAGIC:
                raise refused(
                    "shard_encrypted",
                    "The shard is encrypted (MMPKE01): open it on a recipient's machine, "
                    "e.g. fortemi shard import --key KEYFILE",
                )
            self._file.seek(0)
            self._tar = tarfile.open(fileobj=self._file, mode="r|*")
            first = self._next()
            if first is None or first.name != MANIFEST_NAME:
                raise refused("shard_bad_manifest", f"A shard starts with {MANIFEST_NAME}")
            if first.size > MAX_MANIFEST_BYTES:
                raise refused("shard_too_large", "The shard's manifest is too large")
            self.manifest = parse_manifest(self._read_all(first))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        if self._tar is not None:
            self._tar.close()
        if self._file is not None:
            self._file.close()

    def _next(self) -> tarfile.TarInfo | None:
        try:
            member = self._open_tar().next()
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise _truncated(exc) from None
        if member is None:
            return None
        if not member.isreg():
            raise refused(
                "shard_unsafe_member",
                f"The shard holds {member.name!r}, which is not a regular file (links, "
                "devices and directories are refused)",
            )
        return member

    def _open_tar(self) -> tarfile.TarFile:
        if self._tar is None:
            raise RuntimeError("a ShardReader is read inside its with block")
        return self._tar

    def _read_all(self, member: tarfile.TarInfo) -> bytes:
        source = self._member_file(member)
        try:
            return source.read()
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise _truncated(exc) from None

    def _member_file(self, member: tarfile.TarInfo) -> IO[bytes]:
        source = self._open_tar().extractfile(member)
        if source is None:
            raise refused("shard_unsafe_member", f"{member.name!r} cannot be read as a file")
        return source

    def rows(self) -> Iterator[Row]:
        if self.manifest is None:
            raise RuntimeError("a ShardReader is read inside its with block")
        total = 0
        for entry in self.manifest.components:
            member = self._next()
            if member is None:
                raise refused("shard_truncated", f"The shard ends before component {entry.name}")
            if member.name != entry.path:
                raise refused(
                    "shard_unsafe_member",
                    f"The shard holds {member.name!r} where the manifest lists {entry.path!r}",
                )
            total += member.size
            if member.size > self._limits.max_member_bytes or total > self._limits.max_total_bytes:
                raise refused("shard_too_large", f"{entry.path} is over the import size limit")
            if member.size != entry.bytes:
                raise refused(
                    "shard_checksum_mismatch",
                    f"{entry.path} is {member.size} bytes; the manifest says {entry.bytes}",
                )
            yield from self._component(entry, self._member_file(member))
        if self._next() is not None:
            raise refused(
                "shard_unsafe_member", "The shard holds members its manifest does not list"
            )

    def _component(self, entry: ComponentEntry, source: IO[bytes]) -> Iterator[Row]:
        component = component_named(entry.name)
        if component is None:
            raise refused(
                "shard_unknown_component",
                f"This Fortemi does not know the component {entry.name!r}: upgrade to import it",
            )
        known = {t.name for t in component.tables}
        tables = {t.name: t for t in entry.tables}
        if not set(tables) <= known:
            raise refused(
                "shard_bad_manifest", f"Component {entry.name} lists tables it does not hold"
            )
        counts = dict.fromkeys(tables, 0)
        digest = hashlib.sha256()
        limit = self._limits.max_line_bytes
        while True:
            try:
                line = source.readline(limit + 1)
            except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
                raise _truncated(exc) from None
            if not line:
                break
            digest.update(line)
            if len(line) > limit:
                raise refused("shard_too_large", f"A row of {entry.path} is over the size limit")
            row = _row(entry, line, tables)
            counts[row.table] += 1
            yield row
        if digest.hexdigest() != entry.sha256:
            raise refused(
                "shard_checksum_mismatch",
                f"{entry.path} does not match its SHA-256 in the manifest: the shard is "
                "corrupt or was altered",
            )
        for name, table in tables.items():
            if counts[name] != table.count:
                raise refused(
                    "shard_count_mismatch",
                    f"{entry.path} holds {counts[name]} {name} rows; the manifest says "
                    f"{table.count}",
                )


def _row(entry: ComponentEntry, line: bytes, tables: dict[str, Any]) -> Row:
    try:
        parsed = json.loads(line)
    except ValueError:
        raise refused("shard_bad_row", f"{entry.path} holds a line that is not JSON") from None
    if not isinstance(parsed, dict) or set(parsed) != {"table", "row"}:
        raise refused("shard_bad_row", f"{entry.path}: each line is {{table, row}}")
    table, values = parsed["table"], parsed["row"]
    if table not in tables or not isinstance(values, dict):
        raise refused("shard_bad_row", f"{entry.path} holds a row of an unlisted table")
    if set(values) != set(tables[table].columns):
        raise refused(
            "shard_bad_row",
            f"{entry.path}: a {table} row does not have exactly the columns the manifest lists",
        )
    return Row(entry.name, table, values)


def _truncated(exc: BaseException) -> Exception:
    return refused(
        "shard_truncated",
        f"The shard archive is truncated or not a gzip tar ({type(exc).__name__}); export it again",
    )
