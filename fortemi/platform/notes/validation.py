"""Checks applied to everything a caller sends about notes, before any SQL runs.

Each ``validate_*`` function is named after what it checks and raises :class:`BadUserInput`
naming the field it blames (``extensions["field"]``), so a client can point at its input.
Values come back normalised (tags stripped and de-duplicated, metadata copied through JSON),
so what the service compares and stores is what the database will hold.

Text must be encodable as UTF-8 and free of NUL: PostgreSQL ``text`` cannot store NUL, and a
lone surrogate (which JSON can carry as ``"\\ud800"``) cannot be encoded at all. Rejecting
both here turns what would be a driver error into a message naming the field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes.models import UNSET, ExternalItem, NoteDraft, NoteFilter, NotePatch
from fortemi.platform.times import optional_aware

__all__ = [
    "MAX_EXTERNAL_ID_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TITLE_CHARS",
    "validate_batch",
    "validate_content",
    "validate_draft",
    "validate_external_id",
    "validate_filter",
    "validate_format",
    "validate_item",
    "validate_label",
    "validate_metadata",
    "validate_patch",
    "validate_tags",
    "validate_text",
    "validate_title",
]

MAX_TITLE_CHARS = 1000
MAX_TAG_CHARS = 200
MAX_TAGS = 100
MAX_LABEL_CHARS = 200  # project, collection, source
MAX_EXTERNAL_ID_CHARS = 1000  # vault paths can be long; still bounded
MAX_METADATA_BYTES = 64 * 1024
# PostgreSQL recurses once per level when it parses jsonb; a bound keeps a hostile document
# from exhausting its stack (or Python's) long before the byte limit is reached.
MAX_METADATA_DEPTH = 32
_FORMAT = re.compile(r"[a-z0-9][a-z0-9.+/-]{0,63}")
_SHOWN_CHARS = 80


def _shown(value: str) -> str:
    """``value`` quoted for a message: escapes control characters, bounds the length."""
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "...'"


def _is_clean(value: str) -> bool:
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def validate_text(value: object, field: str) -> str:
    """``value`` if it is a string of valid UTF-8 text without NUL characters."""
    if not isinstance(value, str):
        raise BadUserInput(f"{field} must be a string", field=field)
    if not _is_clean(value):
        raise BadUserInput(f"{field} must be valid UTF-8 text without NUL characters", field=field)
    return value


def _require_bool(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise BadUserInput(f"{field} must be true or false", field=field)
    return value


def validate_title(value: object) -> str:
    title = validate_text(value, "title")
    if len(title) > MAX_TITLE_CHARS:
        raise BadUserInput(
            f"title is {len(title)} characters; the limit is {MAX_TITLE_CHARS}",
            field="title",
            limit=MAX_TITLE_CHARS,
        )
    return title


def validate_content(value: object, *, max_bytes: int) -> str:
    content = validate_text(value, "content")
    size = len(content.encode("utf-8"))
    if size > max_bytes:
        raise BadUserInput(
            f"content is {size} bytes of UTF-8; the limit is {max_bytes} bytes "
            "(setting FORTEMI_MAX_NOTE_BYTES)",
            field="content",
            limit=max_bytes,
            size=size,
        )
    return content


def validate_format(value: object) -> str:
    fmt = validate_text(value, "format")
    if not _FORMAT.fullmatch(fmt):
        raise BadUserInput(
            f"format {_shown(fmt)} is not a format name: use lowercase letters, digits and "
            ".+/- such as 'markdown' or 'text/plain' (^[a-z0-9][a-z0-9.+/-]{0,63}$)",
            field="format",
        )
    return fmt


def validate_label(value: object, field: str) -> str | None:
    """A project, collection or source: ``None`` or a short text."""
    if value is None:
        return None
    label = validate_text(value, field)
    if len(label) > MAX_LABEL_CHARS:
        raise BadUserInput(
            f"{field} is {len(label)} characters; the limit is {MAX_LABEL_CHARS}",
            field=field,
            limit=MAX_LABEL_CHARS,
        )
    return label


SKILL_PREFIX = "SKILL-"


def validate_skill(value: object, field: str = "skill") -> str | None:
    """A shared skill's name: ``None`` or ``SKILL-`` followed by a short name."""
    skill = validate_label(value, field)
    if skill is not None and (not skill.startswith(SKILL_PREFIX) or skill == SKILL_PREFIX):
        raise BadUserInput(
            f"{field} must name a shared skill: 'SKILL-' and a name, e.g. SKILL-kubernetes",
            field=field,
        )
    return skill


def check_owner(state: NoteDraft) -> NoteDraft:
    """A note belongs to at most one project or one skill (its access policy's owner)."""
    if state.project is not None and state.skill is not None:
        raise BadUserInput(
            "A note belongs to a project or to a skill, not both; clear one of them",
            field="skill",
        )
    return state


def validate_tags(value: object) -> tuple[str, ...]:
    """Tags stripped, non-empty, at most 200 characters, de-duplicated in order, at most 100."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise BadUserInput("tags must be a list of strings", field="tags")
    tags: dict[str, None] = {}  # an ordered set
    for raw in value:
        tag = validate_text(raw, "tags").strip()
        if not tag:
            raise BadUserInput("tags must not be empty or blank", field="tags")
        if len(tag) > MAX_TAG_CHARS:
            raise BadUserInput(
                f"tag {_shown(tag)} is {len(tag)} characters; the limit is {MAX_TAG_CHARS}",
                field="tags",
                limit=MAX_TAG_CHARS,
            )
        tags[tag] = None
    if len(tags) > MAX_TAGS:
        raise BadUserInput(
            f"a note has at most {MAX_TAGS} tags; {len(tags)} were given",
            field="tags",
            limit=MAX_TAGS,
        )
    return tuple(tags)


def _check_json_value(value: object, path: str, depth: int) -> None:
    """Walk ``value``; it must be plain JSON whose strings are clean text."""
    if depth > MAX_METADATA_DEPTH:
        raise BadUserInput(
            f"metadata nests deeper than {MAX_METADATA_DEPTH} levels (at {path})",
            field="metadata",
            limit=MAX_METADATA_DEPTH,
        )
    if isinstance(value, str):
        if not _is_clean(value):
            raise BadUserInput(
                f"metadata must be valid UTF-8 text without NUL characters (at {path})",
                field="metadata",
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str) or not _is_clean(key):
                raise BadUserInput(
                    f"metadata keys must be valid UTF-8 text without NUL characters (at {path})",
                    field="metadata",
                )
            _check_json_value(item, f"{path}[{_shown(key)}]", depth + 1)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_json_value(item, f"{path}[{index}]", depth + 1)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise BadUserInput(f"metadata numbers must be finite (at {path})", field="metadata")
    elif value is not None and not isinstance(value, bool | int):
        raise BadUserInput(
            "metadata must hold only JSON values: objects, arrays, strings, numbers, "
            f"booleans and null (at {path})",
            field="metadata",
        )


def validate_metadata(value: object) -> dict[str, Any]:
    """A JSON object of at most 64 KiB, returned as a fresh copy decoded from its JSON."""
    if not isinstance(value, dict):
        raise BadUserInput("metadata must be a JSON object", field="metadata")
    _check_json_value(value, "metadata", 0)
    encoded = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    size = len(encoded.encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise BadUserInput(
            f"metadata is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES} bytes",
            field="metadata",
            limit=MAX_METADATA_BYTES,
        )
    decoded: dict[str, Any] = json.loads(encoded)
    return decoded


def validate_external_id(value: object) -> str:
    external_id = validate_text(value, "external_id")
    if not external_id or len(external_id) > MAX_EXTERNAL_ID_CHARS:
        raise BadUserInput(
            f"external_id must be 1 to {MAX_EXTERNAL_ID_CHARS} characters",
            field="external_id",
            limit=MAX_EXTERNAL_ID_CHARS,
        )
    return external_id


def validate_draft(draft: NoteDraft, *, max_note_bytes: int) -> NoteDraft:
    return check_owner(
        NoteDraft(
            title=validate_title(draft.title),
            content=validate_content(draft.content, max_bytes=max_note_bytes),
            format=validate_format(draft.format),
            source=validate_label(draft.source, "source"),
            metadata=validate_metadata(draft.metadata),
            tags=validate_tags(draft.tags),
            collection=validate_label(draft.collection, "collection"),
            project=validate_label(draft.project, "project"),
            skill=validate_skill(draft.skill),
            starred=_require_bool(draft.starred, "starred"),
            archived=_require_bool(draft.archived, "archived"),
        )
    )


def _not_null(value: object, field: str) -> object:
    if value is None:
        raise BadUserInput(
            f"{field} cannot be null; omit it to keep the current value", field=field
        )
    return value


def validate_patch(patch: NotePatch, *, max_note_bytes: int) -> NotePatch:
    """The patch with every sent field checked; UNSET fields stay UNSET.

    ``collection`` and ``project`` may be sent as null to clear them; every other field
    may be omitted but not nulled.
    """
    expected = patch.expected_version
    if expected is not None and (
        isinstance(expected, bool) or not isinstance(expected, int) or expected < 1
    ):
        raise BadUserInput("expected_version must be a positive integer", field="expected_version")

    def sent(value: object, check: Any, field: str) -> Any:
        return UNSET if value is UNSET else check(_not_null(value, field))

    return NotePatch(
        title=sent(patch.title, validate_title, "title"),
        content=sent(
            patch.content, lambda v: validate_content(v, max_bytes=max_note_bytes), "content"
        ),
        format=sent(patch.format, validate_format, "format"),
        metadata=sent(patch.metadata, validate_metadata, "metadata"),
        tags=sent(patch.tags, validate_tags, "tags"),
        collection=(
            UNSET if patch.collection is UNSET else validate_label(patch.collection, "collection")
        ),
        project=UNSET if patch.project is UNSET else validate_label(patch.project, "project"),
        skill=UNSET if patch.skill is UNSET else validate_skill(patch.skill),
        starred=sent(patch.starred, lambda v: _require_bool(v, "starred"), "starred"),
        archived=sent(patch.archived, lambda v: _require_bool(v, "archived"), "archived"),
        expected_version=expected,
    )


def validate_item(item: ExternalItem, *, max_note_bytes: int) -> ExternalItem:
    """An upsert item checked like a patch (UNSET = omitted; only collection/project nullable)."""
    patch = validate_patch(
        NotePatch(
            title=item.title,
            content=item.content,
            format=item.format,
            metadata=item.metadata,
            tags=item.tags,
            collection=item.collection,
            project=item.project,
            skill=item.skill,
        ),
        max_note_bytes=max_note_bytes,
    )
    return ExternalItem(
        external_id=validate_external_id(item.external_id),
        title=patch.title,
        content=patch.content,
        format=patch.format,
        metadata=patch.metadata,
        tags=patch.tags,
        collection=patch.collection,
        project=patch.project,
        skill=patch.skill,
    )


def validate_batch(
    source: object, items: Sequence[ExternalItem], *, max_note_bytes: int, max_batch: int
) -> tuple[str, list[ExternalItem]]:
    """The source and every item checked; any failure rejects the whole batch.

    Messages about an item name its index and external id so a client can find it.
    """
    label = validate_label(source, "source")
    if not label:
        raise BadUserInput("source must name where the items come from", field="source")
    if not 1 <= len(items) <= max_batch:
        raise BadUserInput(
            f"an upsert takes 1 to {max_batch} items; {len(items)} were given "
            "(setting FORTEMI_MAX_UPSERT_BATCH); split the batch",
            field="items",
            limit=max_batch,
        )
    checked: list[ExternalItem] = []
    first_index: dict[str, int] = {}
    for index, item in enumerate(items):
        try:
            valid = validate_item(item, max_note_bytes=max_note_bytes)
        except BadUserInput as exc:
            raw = getattr(item, "external_id", None)
            shown = _shown(raw) if isinstance(raw, str) else repr(raw)
            extra = {"external_id": raw} if isinstance(raw, str) and _is_clean(raw) else {}
            raise BadUserInput(
                f"item {index} (external id {shown}): {exc.message}; nothing was written",
                **{**exc.extensions, "index": index, **extra},
            ) from exc
        if valid.external_id in first_index:
            raise BadUserInput(
                f"external id {_shown(valid.external_id)} appears twice in the batch (items "
                f"{first_index[valid.external_id]} and {index}); send each note once",
                field="items",
                index=index,
                external_id=valid.external_id,
            )
        first_index[valid.external_id] = index
        checked.append(valid)
    return label, checked


def validate_filter(note_filter: NoteFilter) -> NoteFilter:
    """The filter with its text checked and tags stripped like stored tags are."""

    def tags(values: tuple[str, ...], field: str) -> tuple[str, ...]:
        if isinstance(values, str) or not isinstance(values, Sequence):
            raise BadUserInput(f"{field} must be a list of strings", field=field)
        return tuple(validate_text(v, field).strip() for v in values)

    def optional_bool(value: object, field: str) -> bool | None:
        return None if value is None else _require_bool(value, field)

    return replace(
        note_filter,
        tags_all=tags(note_filter.tags_all, "tags_all"),
        tags_any=tags(note_filter.tags_any, "tags_any"),
        tags_none=tags(note_filter.tags_none, "tags_none"),
        project=validate_label(note_filter.project, "project"),
        projects=(
            None
            if note_filter.projects is None
            else tuple(
                label
                for label in (validate_label(v, "projects") for v in note_filter.projects)
                if label is not None
            )
        ),
        skill=validate_skill(note_filter.skill),
        collection=validate_label(note_filter.collection, "collection"),
        source=validate_label(note_filter.source, "source"),
        starred=optional_bool(note_filter.starred, "starred"),
        archived=optional_bool(note_filter.archived, "archived"),
        deleted=_require_bool(note_filter.deleted, "deleted"),
        created_after=optional_aware(note_filter.created_after, "created_after"),
        created_before=optional_aware(note_filter.created_before, "created_before"),
        updated_after=optional_aware(note_filter.updated_after, "updated_after"),
        updated_before=optional_aware(note_filter.updated_before, "updated_before"),
    )
