"""The per-operation context: who is calling, in which memory, through which runtime."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.types import Info as StrawberryInfo

from fortemi.auth.access import Action, Resource
from fortemi.auth.principal import Principal
from fortemi.platform.errors import Unauthenticated
from fortemi.runtime import Runtime

__all__ = ["Context", "Info"]


@dataclass
class Context:
    runtime: Runtime
    request: Request | WebSocket
    request_id: str
    response: Response | WebSocket | None = None
    principal: Principal | None = None
    memory_name: str | None = None  # as asked for (header / connection_init), unvalidated
    connection_params: dict[str, Any] | None = None  # set by the WebSocket protocol handler
    _memory: str | None = field(default=None, repr=False)

    @property
    def caller(self) -> Principal:
        """The authenticated principal; the transport layer guarantees one is present."""
        if self.principal is None:  # only reachable through a transport bug
            raise Unauthenticated("operation reached a resolver without a principal")
        return self.principal

    async def memory(self) -> str:
        """The request's memory (header or default), checked to exist and migrated; cached."""
        if self._memory is None:
            self._memory = await self.runtime.memories.resolve(self.memory_name)
        return self._memory

    async def authorize(self, action: Action, resource: Resource) -> None:
        """The one place resolvers ask for permission (raises Forbidden)."""
        await self.runtime.access.check(self.caller, action, resource)

    async def authorize_in_memory(self, action: Action) -> str:
        """Resolve the request's memory and check ``action`` on it; returns its name."""
        memory = await self.memory()
        await self.authorize(action, Resource.in_memory(memory))
        return memory


Info = StrawberryInfo[Context, None]
