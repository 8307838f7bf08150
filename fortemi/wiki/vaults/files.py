"""A vault's files as notes and access policies: pure parsing, plus :func:`scan`.

A path is the file's vault-relative POSIX path, as the vault has it
(``projects/poimen/tools/kubectl.md``); it is the note's external id and its
``metadata.path``. Where a file sits says what owns it:

* ``projects/<p>/...``            project ``p``
* ``shared/skills/<SKILL-x>/...`` skill ``SKILL-x`` (a folder not named ``SKILL-...`` there
  is refused: its notes would otherwise fall to the memory's policy, wider than meant)
* anything else (``shared/concepts/...``, the root) neither: the memory's policy governs.

A note's title is its front matter's ``title``, else its first ``# `` heading, else the
file name without ``.md``. Its tags are the front matter's ``tags`` (a list, or one string
of names separated by commas or spaces) followed by its inline ``#tags``.

Access files: ``projects/<p>/_access.yaml`` and ``shared/skills/<SKILL-x>/_access.yaml``
hold the policy of that project or skill, in the server's policy format, read by the
server's own validator (so a vault file and a policy file mean the same thing).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from fortemi.auth.decision import ResourceType
from fortemi.auth.policy.loader import read_yaml
from fortemi.auth.policy.validation import PolicyValidationError, parse_policy
from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes.validation import MAX_EXTERNAL_ID_CHARS, SKILL_PREFIX
from fortemi.wiki.vaults.markdown import FrontMatterError, read_front_matter, read_markdown

__all__ = [
    "ACCESS_FILE",
    "DEFAULT_POLICY_FILE",
    "DENDRON",
    "DENDRON_CONFIG",
    "OBSIDIAN",
    "VAULT_NAME",
    "AccessFile",
    "FileKind",
    "VaultNote",
    "VaultProblem",
    "classify",
    "owner_of",
    "parse_access",
    "parse_note",
    "read_file",
    "scan",
    "validate_path",
    "validate_vault_name",
]

VAULT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ACCESS_FILE = "_access.yaml"
DEFAULT_POLICY_FILE = "policies/default.yaml"
DENDRON = "dendron"
OBSIDIAN = "obsidian"  # no dialect: Obsidian's (and Foam's) link rules
DENDRON_CONFIG = "dendron.yml"  # Dendron's configuration, at the vault's root
_NOTE_SUFFIX = ".md"
_BOM = "\ufeff"


class FileKind(StrEnum):
    NOTE = "note"
    ACCESS = "access"
    DEFAULT_POLICY = "default_policy"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class VaultProblem:
    """Why a file was not synced (``severity="error"``), or a warning about one that was.

    ``reason`` is a stable code (``bad_path``, ``binary``, ``not_utf8``, ``too_large``,
    ``bad_front_matter``, ``bad_policy``, ...); ``message`` says it to a person.
    """

    path: str
    reason: str
    message: str
    line: int | None = None
    field: str | None = None
    severity: str = "error"


@dataclass(frozen=True, slots=True)
class VaultNote:
    path: str
    title: str
    content: str
    tags: tuple[str, ...]
    aliases: tuple[str, ...]
    project: str | None
    skill: str | None
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AccessFile:
    """A project's or skill's policy document as the vault wrote it (``owner:`` renamed)."""

    path: str
    resource_type: ResourceType
    name: str
    document: dict[str, Any]
    warnings: tuple[VaultProblem, ...] = field(default=())


def validate_vault_name(name: object) -> str:
    if not isinstance(name, str) or not VAULT_NAME.fullmatch(name):
        raise BadUserInput(
            f"vault {name!r} is not a vault name: 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$); "
            "pass another with --name",
            field="vault",
        )
    return name


def validate_path(path: object) -> str | VaultProblem:
    """``path`` if it is a vault-relative POSIX path, else the problem with it."""

    def bad(message: str) -> VaultProblem:
        return VaultProblem(str(path)[:MAX_EXTERNAL_ID_CHARS], "bad_path", message)

    if not isinstance(path, str) or not path:
        return bad("a path is a non-empty string")
    if "\x00" in path:
        return bad("a path must not contain NUL")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return bad("a path must be valid UTF-8")
    if len(path) > MAX_EXTERNAL_ID_CHARS:
        return bad(f"a path is at most {MAX_EXTERNAL_ID_CHARS} characters")
    if "\\" in path:
        return bad("a path uses '/' between folders, not '\\'")
    if path.startswith("/") or re.match(r"[A-Za-z]:", path):
        return bad("a path is relative to the vault's root, not absolute")
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        return bad("a path must not contain control characters")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return bad("a path has no empty, '.' or '..' segments")
    if any(part.startswith(".") for part in parts):
        return bad("hidden files and folders (.obsidian, .git, .trash) are not part of a vault")
    return path


def classify(path: str) -> FileKind:
    name = PurePosixPath(path).name
    if name == ACCESS_FILE:
        return FileKind.ACCESS
    if path == DEFAULT_POLICY_FILE:
        return FileKind.DEFAULT_POLICY
    if name.endswith(_NOTE_SUFFIX) and name != _NOTE_SUFFIX:
        return FileKind.NOTE
    return FileKind.OTHER


def owner_of(path: str) -> tuple[str | None, str | None] | VaultProblem:
    """(project, skill) of a file at ``path``, or why its folder cannot own notes."""
    parts = path.split("/")
    if len(parts) >= 3 and parts[0] == "projects":
        return parts[1], None
    if len(parts) >= 4 and parts[:2] == ["shared", "skills"]:
        skill = parts[2]
        if not skill.startswith(SKILL_PREFIX) or skill == SKILL_PREFIX:
            return VaultProblem(
                path,
                "bad_skill_folder",
                f"shared/skills/{skill}/ is not a skill folder: skill folders are named "
                f"{SKILL_PREFIX}<name>, e.g. SKILL-kubernetes; rename the folder",
            )
        return None, skill
    return None, None


def _decode(path: str, data: bytes, max_bytes: int) -> str | VaultProblem:
    if len(data) > max_bytes:
        return VaultProblem(
            path,
            "too_large",
            f"{len(data)} bytes; the limit is {max_bytes} (setting FORTEMI_MAX_NOTE_BYTES)",
        )
    if b"\x00" in data:
        return VaultProblem(path, "binary", "a binary file (it holds NUL bytes), not text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return VaultProblem(
            path, "not_utf8", f"not UTF-8 text: invalid byte at offset {exc.start}", line=line
        )
    return text.removeprefix(_BOM)


def _strings(value: object, name: str) -> list[str] | None:
    """A front matter list of scalars (or one scalar) as strings; None if it is neither."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    if any(isinstance(item, dict | list) for item in items):
        return None
    return [str(item).strip() for item in items if item is not None and str(item).strip()]


def _front_tags(value: object) -> list[str] | None:
    if isinstance(value, str):
        # "a, b c": Obsidian reads commas and spaces alike as separators.
        return [t for t in re.split(r"[,\s]+", value) if t]
    return _strings(value, "tags")


def _dedup(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v))


def _tag_names(values: list[str]) -> tuple[str, ...]:
    """Tags as names: a leading ``#`` (``tags: ["#a"]``) is the tag syntax, not the name."""
    return _dedup([v.lstrip("#").strip() for v in values])


def parse_note(
    path: str, data: bytes, *, vault: str, max_bytes: int, flavour: str | None = None
) -> VaultNote | VaultProblem:
    """The note a markdown file makes, or why it makes none."""
    owner = owner_of(path)
    if isinstance(owner, VaultProblem):
        return owner
    text = _decode(path, data, max_bytes)
    if isinstance(text, VaultProblem):
        return text
    try:
        front, body = read_front_matter(text)
    except FrontMatterError as exc:
        return VaultProblem(path, "bad_front_matter", exc.message, line=exc.line)
    aliases = _strings(front.get("aliases", front.get("alias")), "aliases")
    if aliases is None:
        return VaultProblem(
            path, "bad_front_matter", "aliases must be a list of strings", field="aliases"
        )
    front_tags = _front_tags(front.get("tags", front.get("tag")))
    if front_tags is None:
        return VaultProblem(
            path, "bad_front_matter", "tags must be a list of strings", field="tags"
        )
    markdown = read_markdown(body)
    raw_title = front.get("title")
    title = (
        str(raw_title).strip()
        if isinstance(raw_title, str | int | float) and str(raw_title).strip()
        else None
    )
    stem = PurePosixPath(path).name[: -len(_NOTE_SUFFIX)]
    metadata: dict[str, Any] = {"path": path, "vault": vault, "aliases": list(_dedup(aliases))}
    if flavour is not None:
        metadata["flavour"] = flavour
    return VaultNote(
        path=path,
        title=title or markdown.heading or stem,
        content=text,
        tags=_tag_names([*front_tags, *markdown.tags]),
        aliases=_dedup(aliases),
        project=owner[0],
        skill=owner[1],
        metadata=metadata,
    )


def _access_target(path: str) -> tuple[ResourceType, str] | None:
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == "projects" and parts[2] == ACCESS_FILE:
        return ResourceType.PROJECT, parts[1]
    if len(parts) == 4 and parts[:2] == ["shared", "skills"] and parts[3] == ACCESS_FILE:
        return ResourceType.SKILL, parts[2]
    return None


def parse_access(
    path: str, data: bytes, *, memory: str | None, max_bytes: int
) -> AccessFile | VaultProblem:
    """The policy an ``_access.yaml`` holds, checked by the server's policy validator.

    Accepted with a warning: no ``version:`` (read as version 1, the only one), and
    ``owner:`` for ``owner_group:`` (renamed; both at once is refused). Everything else the
    validator refuses is refused here, with file, line and field: a policy that does not
    parse is never read as a wider one.
    """
    target = _access_target(path)
    if target is None:
        return VaultProblem(
            path,
            "bad_policy_location",
            "an _access.yaml applies only as projects/<project>/_access.yaml or "
            "shared/skills/<SKILL-name>/_access.yaml; this one was not applied",
        )
    text = _decode(path, data, max_bytes)
    if isinstance(text, VaultProblem):
        return text
    try:
        document, lines = read_yaml(text, path)
    except PolicyValidationError as exc:
        first = exc.errors[0]
        return VaultProblem(path, "bad_policy", first.message, line=first.line, field=first.field)
    if not isinstance(document, dict):
        return VaultProblem(path, "bad_policy", "a policy is a mapping of keys to values", line=1)
    warnings: list[VaultProblem] = []
    document = dict(document)
    if "version" not in document:
        warnings.append(
            VaultProblem(
                path,
                "policy_without_version",
                "no `version:`; read as version 1 (add `version: 1`)",
                field="version",
                severity="warning",
            )
        )
    if "owner" in document:
        line = lines.get(("owner",))
        if "owner_group" in document:
            return VaultProblem(
                path,
                "bad_policy",
                "both `owner:` and `owner_group:`; keep `owner_group:` only",
                line=line,
                field="owner",
            )
        document["owner_group"] = document.pop("owner")
        lines = {(("owner_group",) if k[:1] == ("owner",) else k): v for k, v in lines.items()}
        warnings.append(
            VaultProblem(
                path,
                "policy_owner_renamed",
                "`owner:` read as `owner_group:` (rename it)",
                line=line,
                field="owner",
                severity="warning",
            )
        )
    try:
        parse_policy(
            document,
            resource_type=target[0],
            name=target[1],
            memory=None if target[0] is ResourceType.SKILL else memory,
            source="vault",
            file=path,
            lines=lines,
        )
    except PolicyValidationError as exc:
        first = exc.errors[0]
        message = "; ".join(
            e.message if e.field is None else f"{e.field}: {e.message}" for e in exc.errors
        )
        return VaultProblem(path, "bad_policy", message, line=first.line, field=first.field)
    return AccessFile(path, target[0], target[1], document, tuple(warnings))


def _wanted(path: str) -> bool:
    return classify(path) is not FileKind.OTHER


def read_file(file: Path, max_bytes: int) -> bytes:
    """At most ``max_bytes + 1`` bytes of ``file``: enough to tell that it is too large."""
    with file.open("rb") as stream:
        return stream.read(max_bytes + 1)


def scan(root: Path, *, max_bytes: int) -> Iterator[tuple[str, bytes | VaultProblem]]:
    """Every file of the vault at ``root`` that sync reads, in path order, with its bytes
    (at most ``max_bytes + 1`` of them) or the problem reading it.

    Hidden folders and files (``.obsidian``, ``.git``, ``.trash``) and symbolic links are
    skipped (a link could lead out of the vault); of the rest only markdown notes,
    ``_access.yaml`` files and ``policies/default.yaml`` are read.
    """
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        dirs[:] = [d for d in dirs if not d.startswith(".") and not (base / d).is_symlink()]
        relative = base.relative_to(root).as_posix()
        for name in files:
            if name.startswith(".") or (base / name).is_symlink():
                continue
            path = name if relative == "." else f"{relative}/{name}"
            if _wanted(path):
                found.append(path)
    for path in sorted(found):
        try:
            yield path, read_file(root / path, max_bytes)
        except OSError as exc:
            yield path, VaultProblem(path, "unreadable", f"cannot read: {exc.strerror or exc}")
