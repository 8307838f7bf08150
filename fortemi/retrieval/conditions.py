"""The conditions on ``note`` that both legs apply before ranking: the note filter (tags,
projects, dates, flags, the caller's read scope) and the query's own syntax."""

from __future__ import annotations

from fortemi.platform.notes.models import NoteFilter
from fortemi.platform.notes.repository import note_filter_where
from fortemi.platform.sql import Where
from fortemi.retrieval.query import ParsedQuery

__all__ = ["note_conditions"]


def note_conditions(note_filter: NoteFilter, query: ParsedQuery, *leading: object) -> Where:
    """A WHERE clause on ``note`` for ``note_filter`` and ``query``'s required phrases and
    exclusions, its values numbered after ``leading`` (what the statement binds first).
    The query's syntax filters every leg, like the tag filters, so no leg ranks a note the
    query rules out."""
    where = Where(*leading)
    note_filter_where(note_filter, where)
    for phrase in query.phrases:
        where.add("note.lex @@ phraseto_tsquery('english', {0})", phrase)
    for excluded in query.excluded:
        where.add("NOT (note.lex @@ phraseto_tsquery('english', {0}))", excluded)
    return where
