"""Archives: ZIP (and its kinds: JAR, wheel, EPUB), tar (plain, gzip, bzip2, xz), and single
gzip, bzip2 or xz files: the member listing, and the text of each member extracted by the
library's own dispatch, one level deeper.

Everything happens in memory: no member is ever written to disk, so a ``../`` or absolute
member path cannot touch the file system; such members are listed as unsafe and not read.
Archive bombs are refused before anything is decompressed, from the sizes the archive
declares (zipfile and tarfile never read past a member's declared size): more members than
``max_archive_members``, more than ``max_archive_total_bytes`` uncompressed, or a
compression ratio over ``max_archive_ratio`` (for a member, or the whole, past
:data:`RATIO_FLOOR` bytes: a small file of zeros compresses well and is no bomb). A
compressed stream without declared sizes (a ``.gz``) is decompressed only up to the total
limit. Members nested deeper than ``max_archive_depth`` are listed, not read.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import posixpath
import tarfile
import zipfile
from collections.abc import Callable
from typing import Any

from fortemi.documents.extraction._run import Read, Run, TextSink, Unavailable, Unreadable
from fortemi.documents.extraction.base import ExtractionStatus, Health, Limits
from fortemi.documents.models import Detection

__all__ = ["ArchiveAdapter", "check_zip"]

RATIO_FLOOR = 1024 * 1024
_ZIP_KINDS = ("zip", "jar", "python-wheel", "android-package", "epub")
_STREAMS = ("gzip", "bzip2", "xz")
_READERS: dict[str, Callable[[io.BytesIO], io.BufferedIOBase]] = {
    "gzip": lambda raw: gzip.GzipFile(fileobj=raw),
    "bzip2": bz2.BZ2File,
    "xz": lzma.LZMAFile,
}


def unsafe_path(name: str) -> bool:
    """Whether a member's path leaves the archive's root (absolute, a drive, ``..``)."""
    normal = name.replace("\\", "/")
    if normal.startswith("/") or (len(normal) > 1 and normal[1] == ":"):
        return True
    return ".." in posixpath.normpath(normal).split("/")


def _bomb(detail: str) -> Unreadable:
    return Unreadable("archive_bomb", f"{detail}; refused without decompressing")


def _check_sizes(sizes: list[tuple[int, int]], whole: int, limits: Limits) -> None:
    """``sizes``: (uncompressed, compressed) per member, as declared; ``whole``: the
    archive's own size."""
    if len(sizes) > limits.max_archive_members:
        raise Unreadable(
            "too_many_members",
            f"{len(sizes)} members, over the limit of {limits.max_archive_members}",
        )
    total = sum(size for size, _ in sizes)
    if total > limits.max_archive_total_bytes:
        raise _bomb(f"{total} bytes uncompressed, over {limits.max_archive_total_bytes}")
    for size, packed in sizes:
        if size > RATIO_FLOOR and size / max(packed, 1) > limits.max_archive_ratio:
            raise _bomb(f"a member expands {size / max(packed, 1):.0f} times")
    if total > RATIO_FLOOR and total / max(whole, 1) > limits.max_archive_ratio:
        raise _bomb(f"the archive expands {total / max(whole, 1):.0f} times")


def check_zip(data: bytes, limits: Limits) -> zipfile.ZipFile:
    """The ZIP in ``data``, opened in memory once its declared sizes pass the limits."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise Unreadable("corrupt_archive", f"not a readable ZIP: {exc}") from exc
    infos = archive.infolist()
    _check_sizes([(i.file_size, i.compress_size) for i in infos], len(data), limits)
    return archive


class ArchiveAdapter:
    name = "archive"

    def health(self) -> Health:
        return Health(self.name, True, "built in (zipfile, tarfile, gzip, bz2, lzma)")

    def read(self, data: bytes, *, filename: str | None, detection: Detection, run: Run) -> Read:
        kind = detection.type.name
        if kind in _ZIP_KINDS or detection.type.container == "zip":
            return self._zip(data, run)
        if kind == "tar":
            return self._tar(data, run)
        if kind in _STREAMS:
            if _is_tar(data, kind):
                _bounded_stream(data, kind, run.limits)
                return self._tar(data, run)
            return self._stream(data, kind, filename, run)
        raise Unavailable(
            "unsupported_format",
            f"no reader for {detection.type.display_name} files ships with Fortemi",
        )

    def _zip(self, data: bytes, run: Run) -> Read:
        archive = check_zip(data, run.limits)
        members = []
        with archive:
            for info in archive.infolist():
                if info.is_dir():
                    continue
                members.append((info.filename, info.file_size, _zip_reader(archive, info)))
            return _listing(members, run)

    def _tar(self, data: bytes, run: Run) -> Read:
        try:
            # "r:*": plain, gzip, bzip2 or xz, as the bytes say
            archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
        except (tarfile.TarError, EOFError, OSError, lzma.LZMAError) as exc:
            raise Unreadable("corrupt_archive", f"not a readable tar: {exc}") from exc
        with archive:
            try:
                infos: list[tarfile.TarInfo] = []
                for info in archive:  # headers only; a member's bytes are read on demand
                    run.check(f"member {len(infos) + 1}")
                    infos.append(info)
                    if len(infos) > run.limits.max_archive_members:
                        _check_sizes([(0, 0)] * len(infos), len(data), run.limits)
            except (tarfile.TarError, EOFError, OSError, lzma.LZMAError) as exc:
                raise Unreadable("corrupt_archive", f"the tar is cut or damaged: {exc}") from exc
            files = [i for i in infos if i.isfile()]
            _check_sizes([(i.size, i.size) for i in files], len(data), run.limits)
            listed = [(i.name, i.size, _tar_reader(archive, i)) for i in files]
            return _listing(listed, run)

    def _stream(self, data: bytes, kind: str, filename: str | None, run: Run) -> Read:
        limit = run.limits.max_archive_total_bytes
        try:
            with _READERS[kind](io.BytesIO(data)) as stream:
                inner = stream.read(limit + 1)
        except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
            raise Unreadable("corrupt_archive", f"not readable {kind} data: {exc}") from exc
        if len(inner) > limit:
            raise _bomb(f"{kind} data expands past {limit} bytes")
        if len(inner) > RATIO_FLOOR and len(inner) / len(data) > run.limits.max_archive_ratio:
            raise _bomb(f"{kind} data expands {len(inner) / len(data):.0f} times")
        name = posixpath.basename(filename or "file")
        stem = name.rsplit(".", 1)[0] if "." in name else name
        return _listing([(stem, len(inner), lambda: inner)], run)


def _bounded_stream(data: bytes, kind: str, limits: Limits) -> None:
    """Refuse a compressed tar that expands past the limits, before tarfile walks it (its
    walk would decompress every member to skip it). Reads in pieces, keeping none."""
    total, limit = 0, limits.max_archive_total_bytes
    try:
        with _READERS[kind](io.BytesIO(data)) as stream:
            while piece := stream.read(1024 * 1024):
                total += len(piece)
                if total > limit:
                    raise _bomb(f"{kind} data expands past {limit} bytes")
    except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
        raise Unreadable("corrupt_archive", f"not readable {kind} data: {exc}") from exc
    if total > RATIO_FLOOR and total / len(data) > limits.max_archive_ratio:
        raise _bomb(f"{kind} data expands {total / len(data):.0f} times")


def _is_tar(data: bytes, kind: str) -> bool:
    try:
        with _READERS[kind](io.BytesIO(data)) as stream:
            head = stream.read(512)
    except (OSError, EOFError, lzma.LZMAError, ValueError):
        return False
    return bool(head[257:262] == b"ustar")


def _zip_reader(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    def read() -> bytes:
        with archive.open(info) as member:
            return member.read(info.file_size + 1)

    return read


def _tar_reader(archive: tarfile.TarFile, info: tarfile.TarInfo) -> Any:
    def read() -> bytes:
        member = archive.extractfile(info)
        return b"" if member is None else member.read(info.size + 1)

    return read


def _listing(members: list[tuple[str, int, Any]], run: Run) -> Read:
    """The listing of ``members`` (name, size, reader) and the text of those that have it."""
    sink = TextSink(run.limits.max_text_bytes)
    listed: list[dict[str, Any]] = []
    deep_enough = run.depth + 1 > run.limits.max_archive_depth
    for name, size, reader in members:
        run.check(f"member {name!r}")
        entry: dict[str, Any] = {"name": name, "size": size}
        listed.append(entry)
        if unsafe_path(name):
            entry["skipped"] = "unsafe_path"
            continue
        if deep_enough or run.nested is None:
            entry["skipped"] = "depth_limit"
            continue
        if sink.full:
            entry["skipped"] = "text_limit"
            continue
        try:
            content = reader()
        except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, lzma.LZMAError,
                NotImplementedError, RuntimeError) as exc:  # fmt: skip
            entry["skipped"] = f"unreadable: {type(exc).__name__}"
            continue
        inner = run.nested(name, content, run.child())
        entry["status"] = inner.status.value
        if inner.status is not ExtractionStatus.DONE:
            entry["reason"] = inner.reason
        elif inner.text.strip():
            sink.write(f"## {name}\n\n{inner.text.strip()}\n\n")
    metadata = {"members": len(listed), "listing": listed,
                "total_bytes": sum(size for _, size, _ in members)}  # fmt: skip
    header = "\n".join(f"- {entry['name']} ({entry['size']} bytes)" for entry in listed)
    return Read(f"{header}\n\n{sink.text()}".strip(), metadata, truncated=sink.truncated)
