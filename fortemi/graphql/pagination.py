"""Relay connections: one ``PageInfo``, and the generic edge and connection every list uses.

A list's types are concrete subclasses (``class NoteEdge(Edge[Note])``,
``class NoteConnection(Connection[NoteEdge])``), so each keeps the name clients know.
``strawberry.relay`` is not used: its connections take only node types that implement its
own ``Node`` interface (an audit entry or a webhook delivery is not one), it would name an
audit entry's edge ``AuditEntryEdge`` where clients know ``AuditEdge``, its types bring
descriptions and a field order that change the SDL clients hold, and its slicing is by
offset, where every list here reads by keyset (:mod:`fortemi.platform.pages`, which also
states how ``hasPreviousPage`` is decided).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import strawberry

from fortemi.platform.pages import Page

__all__ = ["Connection", "Edge", "PageInfo"]

N = TypeVar("N")
E = TypeVar("E")


@strawberry.type
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None

    @classmethod
    def of(cls, page: Page[Any]) -> PageInfo:
        return cls(
            has_next_page=page.has_next_page,
            has_previous_page=page.has_previous_page,
            start_cursor=page.start_cursor,
            end_cursor=page.end_cursor,
        )


@strawberry.type
class Edge(Generic[N]):
    cursor: str
    node: N


@strawberry.type
class Connection(Generic[E]):
    edges: list[E]
    page_info: PageInfo
