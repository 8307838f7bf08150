"""Comparing notes: states for change detection, versions for a readable diff.

A note's *state* is a :class:`NoteDraft` holding every field a caller can set. The
*versioned* fields (title, content, format, metadata, tags) are history: changing one makes
a new version. The *attributes* (collection, project, starred, archived) are organisation:
changing one updates the note in place, without a version, because a version is a state of
the text a reader might want back, and refiling a note does not change its text.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import replace
from decimal import Decimal
from typing import Any

import blake3

from fortemi.platform.notes.models import (
    UNSET,
    ChangePolicy,
    ExternalItem,
    Note,
    NoteDraft,
    NotePatch,
    NoteVersion,
)

__all__ = [
    "VERSIONED_FIELDS",
    "apply_item",
    "apply_patch",
    "content_hash",
    "json_equal",
    "owner_after",
    "same_state",
    "state_of",
    "unified_diff",
    "versioned_change",
    "with_version",
]

VERSIONED_FIELDS = ("title", "content", "format", "metadata", "tags")
# The order of a diff's sections: the text first, then what describes it.
VERSIONED_DIFF_ORDER = ("title", "content", "format", "tags", "metadata")
_ATTRIBUTES = ("collection", "project", "skill", "starred", "archived")
_ITEM_FIELDS = (
    "title", "content", "format", "metadata", "tags", "collection", "project", "skill",
)  # fmt: skip
_DEFAULTS = NoteDraft()


def content_hash(content: str) -> str:
    return "blake3:" + blake3.blake3(content.encode("utf-8")).hexdigest()


def state_of(note: Note) -> NoteDraft:
    """The state of a stored note: every field a caller can set."""
    return NoteDraft(
        title=note.title,
        content=note.content,
        format=note.format,
        source=note.source,
        metadata=note.metadata,
        tags=note.tags,
        collection=note.collection,
        project=note.project,
        skill=note.skill,
        starred=note.starred,
        archived=note.archived,
    )


def with_version(state: NoteDraft, version: NoteVersion) -> NoteDraft:
    """``state`` with the versioned fields of ``version`` (attributes are not history)."""
    return replace(state, **{name: getattr(version, name) for name in VERSIONED_FIELDS})


def apply_patch(state: NoteDraft, patch: NotePatch) -> NoteDraft:
    """``state`` with the fields ``patch`` sends; UNSET fields keep their value."""
    sent = {
        name: getattr(patch, name)
        for name in (*VERSIONED_FIELDS, *_ATTRIBUTES)
        if getattr(patch, name) is not UNSET
    }
    return replace(state, **sent)


def apply_item(state: NoteDraft, item: ExternalItem, policy: ChangePolicy) -> NoteDraft:
    """The state ``item`` would give a note now in ``state``.

    Under REPLACE an omitted field falls back to its default; otherwise it keeps its value.
    Starred and archived belong to the note's readers, not the external source, and never
    change here.
    """
    values: dict[str, Any] = {}
    for name in _ITEM_FIELDS:
        value = getattr(item, name)
        if value is UNSET:
            if policy is not ChangePolicy.REPLACE:
                continue
            value = getattr(_DEFAULTS, name)
        values[name] = value
    return replace(state, **values)


def owner_after(
    owner: tuple[str | None, str | None] | None, item: ExternalItem, policy: ChangePolicy
) -> tuple[str | None, str | None]:
    """(project, skill) of the note once ``item`` is upserted: the owner the upsert
    writes, by :func:`apply_item`'s rule. ``owner`` is the existing note's, None when the
    item creates one (then every omitted field takes its default, as on insert)."""
    if owner is None:
        state = apply_item(_DEFAULTS, item, ChangePolicy.REPLACE)
    else:
        state = apply_item(replace(_DEFAULTS, project=owner[0], skill=owner[1]), item, policy)
    return state.project, state.skill


def json_equal(a: object, b: object) -> bool:
    """Equality as jsonb sees it: numbers by decimal value, booleans apart from numbers.

    Python's ``==`` says ``True == 1``; jsonb says they differ. jsonb stores numbers as
    ``numeric`` (so ``1e20`` comes back as an integer), which is compared here by the
    decimal the JSON encoder would have written.
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return _decimal(a) == _decimal(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _decimal(number: int | float) -> Decimal:
    return Decimal(number) if isinstance(number, int) else Decimal(repr(number))


def versioned_change(old: NoteDraft, new: NoteDraft) -> bool:
    """Whether going from ``old`` to ``new`` changes a versioned field."""
    return (
        old.title != new.title
        or old.content != new.content
        or old.format != new.format
        or old.tags != new.tags
        or not json_equal(old.metadata, new.metadata)
    )


def same_state(old: NoteDraft, new: NoteDraft) -> bool:
    return not versioned_change(old, new) and all(
        getattr(old, name) == getattr(new, name) for name in (*_ATTRIBUTES, "source")
    )


def _lines(text: str) -> list[str]:
    """Lines split at ``\\n`` only (str.splitlines also splits at \\r, \\f, U+2028...)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _section(old: str, new: str, old_label: str, new_label: str) -> tuple[list[str], int, int]:
    a, b = _lines(old), _lines(new)
    out: list[str] = []
    for line in difflib.unified_diff(a, b, old_label, new_label):
        if line.endswith("\n"):
            out.append(line)
        else:  # the last line of a text without a final newline, as GNU diff shows it
            out.extend((line + "\n", "\\ No newline at end of file\n"))
    # The same matcher unified_diff uses, so the counts agree with the hunks shown.
    additions = deletions = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag != "equal":
            deletions += i2 - i1
            additions += j2 - j1
    return out, additions, deletions


def _text_of(version: NoteVersion, name: str) -> str:
    """A versioned field as the text its diff section compares: tags one per line,
    metadata as indented JSON with sorted keys (so key order never shows as a change)."""
    if name == "tags":
        return "".join(f"{tag}\n" for tag in version.tags)
    if name == "metadata":
        return json.dumps(version.metadata, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    value: str = getattr(version, name)
    return value


def unified_diff(old: NoteVersion, new: NoteVersion) -> tuple[str, int, int]:
    """A unified diff of every versioned field: (text, added lines, deleted lines).

    Each field is diffed as a file of its own (``vN/title``, ``vN/content``, ``vN/format``,
    ``vN/tags``, ``vN/metadata``), in that order, so a title change never shifts the
    content's line numbers and a version made by a change of tags or metadata alone
    shows that change. Only sections that differ appear. Identical → ("", 0, 0).
    """
    text: list[str] = []
    additions = deletions = 0
    for name in VERSIONED_DIFF_ORDER:
        lines, added, deleted = _section(
            _text_of(old, name),
            _text_of(new, name),
            f"v{old.version}/{name}",
            f"v{new.version}/{name}",
        )
        text.extend(lines)
        additions += added
        deletions += deleted
    return "".join(text), additions, deletions
