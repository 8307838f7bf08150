"""The graph events every path that changes links or concepts publishes (GraphQL, jobs).

A change that belongs to one note (its links, its concepts) is ``note.<kind>``, carrying
the note's owner (project, skill) like every note event, so each subscriber's read scope
filters it. A change to the memory's graph as a whole (vocabulary, maintenance) is
``graph.<kind>``, which only a memory-wide reader receives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fortemi.platform.events import Event
from fortemi.platform.ids import to_global_id
from fortemi.platform.notes.events import note_event_payload
from fortemi.platform.notes.models import Note

__all__ = ["GRAPH_EVENT_KINDS", "NOTE_GRAPH_EVENT_KINDS", "graph_event", "note_graph_event"]

NOTE_GRAPH_EVENT_KINDS = ("links_changed", "concepts_changed")
GRAPH_EVENT_KINDS = ("vocabulary_changed", "linked", "maintained")


def note_graph_event(
    kind: str, memory: str, note: Note, actor: str | None, payload: Mapping[str, Any]
) -> Event:
    """``note.<kind>`` for a change to ``note``'s links or concepts."""
    if kind not in NOTE_GRAPH_EVENT_KINDS:
        raise ValueError(f"unknown note graph event kind {kind!r}")
    return Event(
        type=f"note.{kind}",
        entity_type="note",
        entity_id=to_global_id("Note", note.id),
        memory=memory,
        actor=actor,
        payload={**payload, **note_event_payload(note)},
    )


def graph_event(kind: str, memory: str, actor: str | None, payload: Mapping[str, Any]) -> Event:
    """``graph.<kind>`` for a change to ``memory``'s graph as a whole."""
    if kind not in GRAPH_EVENT_KINDS:
        raise ValueError(f"unknown graph event kind {kind!r}")
    return Event(
        type=f"graph.{kind}",
        entity_type="memory",
        entity_id=memory,
        memory=memory,
        actor=actor,
        payload=dict(payload),
    )
