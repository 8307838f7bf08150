"""The note statements bind every field of the draft by name (no positional tuple)."""

from __future__ import annotations

from uuid import uuid4

from fortemi.platform.notes.models import NoteDraft
from fortemi.platform.notes.repository import _INSERT, _WRITE, NoteInsert, NoteWrite

DRAFT = NoteDraft(
    title="t", content="c", format="markdown", source="s", metadata={"k": 1}, tags=("a",),
    collection="col", project="p", skill="sk", starred=True, archived=False,
)  # fmt: skip


def test_an_insert_binds_each_draft_field_where_its_name_says() -> None:
    note_id = uuid4()
    args = NoteInsert(note_id, DRAFT, "hash", "actor", "ext", "x1").args()

    # The n-th value is $n; the statement's names say which field each one is.
    by_name = dict(zip(_INSERT.names, args, strict=True))
    assert by_name == {
        "id": note_id, "title": "t", "content": "c", "format": "markdown", "source": "s",
        "metadata": {"k": 1}, "tags": ["a"], "collection": "col", "project": "p",
        "starred": True, "archived": False, "content_hash": "hash", "external_source": "ext",
        "external_id": "x1", "actor": "actor", "skill": "sk",
    }  # fmt: skip


def test_a_write_binds_each_changeable_field_and_never_source() -> None:
    note_id = uuid4()
    args = NoteWrite(note_id, DRAFT, 3, "hash", True, "actor").args()

    by_name = dict(zip(_WRITE.names, args, strict=True))
    assert "source" not in by_name
    assert (by_name["skill"], by_name["version"], by_name["new_version"]) == ("sk", 3, True)
    assert by_name["actor"] == "actor"
