"""Notes as MCP resources: ``fortemi://<memory>/notes/<id>``, served as markdown.

A note is read with the ``note`` query as the caller, so it is readable exactly when
GraphQL would return it; a note that is absent and one the caller may not read give the
same NOT_FOUND.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from starlette.requests import Request

from fortemi.mcp.gateway import Gateway, Outcome, bad_input, not_found, outcome_error
from fortemi.platform.errors import FortemiError
from fortemi.platform.ids import parse_note_id, to_global_id

__all__ = ["NoteUri", "read_note", "recent_notes"]

_URI = re.compile(
    r"fortemi://(?P<memory>[a-z][a-z0-9_]{0,39})/notes/(?P<id>[A-Za-z0-9_=:-]{1,100})"
)
_READ = """query read_note($id: ID!) { note(id: $id) {
  id title content format project path tags version updatedAt deleted } }"""
_RECENT = """query recent_notes($first: Int!) { notes(first: $first) {
  edges { node { id title path updatedAt } } } }"""
RECENT_RESOURCES = 50
_LISTED = "mcp:resources/list"


@dataclass(frozen=True, slots=True)
class NoteUri:
    TEMPLATE = "fortemi://{memory}/notes/{id}"

    memory: str
    note_id: str

    @classmethod
    def parse(cls, uri: str) -> NoteUri:
        match = _URI.fullmatch(uri)
        if match is None:
            raise bad_input(f"{uri!r} is not a note URI ({cls.TEMPLATE})")
        try:
            note_id = to_global_id("Note", parse_note_id(match["id"]))
        except FortemiError:
            raise bad_input(f"{uri!r} names no note id") from None
        # One spelling per note (its global id), so a subscription matches the change events.
        return cls(match["memory"], note_id)

    def __str__(self) -> str:
        return f"fortemi://{self.memory}/notes/{self.note_id}"


def markdown(note: dict[str, Any]) -> str:
    """The note's content under its title (markdown notes keep their own headings)."""
    content = str(note.get("content") or "")
    title = str(note.get("title") or "")
    if not title or content.lstrip().startswith("# "):
        return content
    return f"# {title}\n\n{content}"


async def read_note(
    gateway: Gateway, request: Request, uri: NoteUri, *, audit_name: str
) -> types.TextResourceContents:
    outcome = await gateway.run(
        request, "read_note", _READ, {"id": uri.note_id}, memory=uri.memory, audit_name=audit_name
    )
    note = None if outcome.failed else (outcome.data or {}).get("note")
    if not outcome.failed and (note is None or note.get("deleted")):
        outcome = Outcome(None, [not_found(f"No note {uri.note_id} in memory {uri.memory}")])
    if outcome.failed or note is None:
        raise outcome_error(outcome)
    return types.TextResourceContents(uri=str(uri), mime_type="text/markdown", text=markdown(note))


async def recent_notes(gateway: Gateway, request: Request) -> list[types.Resource]:
    """The caller's most recently changed notes in the request's memory."""
    memories = await gateway.run(
        request,
        "default_memory",
        "query default_memory { memories { name isDefault } }",
        {},
        audit_name=_LISTED,
    )
    outcome = await gateway.run(
        request,
        "recent_notes",
        _RECENT,
        {"first": RECENT_RESOURCES},
        audit_name=_LISTED,
    )
    if memories.failed or outcome.failed:
        raise outcome_error(memories if memories.failed else outcome)
    memory = _memory_of(request, memories.data or {})
    edges = ((outcome.data or {}).get("notes") or {}).get("edges") or []
    return [
        types.Resource(
            uri=str(NoteUri(memory, edge["node"]["id"])),
            name=edge["node"]["title"] or edge["node"]["id"],
            description=edge["node"].get("path"),
            mime_type="text/markdown",
        )
        for edge in edges
    ]


def _memory_of(request: Request, data: dict[str, Any]) -> str:
    asked = request.headers.get("x-fortemi-memory")
    if asked:
        return asked
    return next((m["name"] for m in data.get("memories") or () if m["isDefault"]), "default")
