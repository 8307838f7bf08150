"""Wiki links of vaults over GraphQL: a vault's link status, and a project's reachable set.

Access: both read through the caller's read scope, applied in SQL. ``vaultStatus`` counts
only the notes the caller may read (and their links): a vault that does not exist and one
whose notes the caller may not read both report zero counts, so the answer never tells
them apart. ``vaultReach`` first needs ``read`` on the project (FORBIDDEN with the
reason otherwise, audited), then lists only the reached notes the caller may read (a skill
the caller may not read is left out, not named).
"""

from __future__ import annotations

from enum import Enum

import strawberry

from fortemi.auth.decision import Action, Resource
from fortemi.graph.links.models import VaultDangling, VaultStatus
from fortemi.graphql.context import Info
from fortemi.platform.errors import BadUserInput

__all__ = ["VaultLinkQuery"]

_MAX_NAME = 200


@strawberry.enum(description="Why a vault's wiki link names no note")
class DanglingReason(Enum):
    DANGLING = strawberry.enum_value("dangling", description="No note matches any rule")
    AMBIGUOUS = strawberry.enum_value(
        "ambiguous",
        description="Several notes match the deciding rule and not exactly one of them is "
        "in the source's project",
    )


@strawberry.type(description="A wiki link of a vault note that resolves to no note")
class VaultDanglingLink:
    source_id: strawberry.ID = strawberry.field(description="The note the link is written in")
    source_path: str = strawberry.field(description="That note's vault-relative path")
    target: str = strawberry.field(description="As written, without heading and label")
    heading: str | None
    reason: DanglingReason
    matches: int = strawberry.field(description="How many notes matched (ambiguous: 2 or more)")

    @classmethod
    def from_model(cls, found: VaultDangling) -> VaultDanglingLink:
        return cls(
            source_id=strawberry.ID(str(found.source_id)),
            source_path=found.source_path,
            target=found.target,
            heading=found.heading,
            reason=DanglingReason(found.reason),
            matches=found.matches,
        )


@strawberry.type(description="A vault's notes and wiki links, over the notes you may read")
class VaultLinkStatus:
    vault: str
    notes: int = strawberry.field(description="Live notes of the vault you may read")
    links: int = strawberry.field(description="Wiki links written in those notes")
    resolved: int = strawberry.field(description="Links that name a note")
    dangling: int = strawberry.field(description="Links that name none (ambiguous included)")
    ambiguous: int = strawberry.field(description="Dangling links that matched several notes")
    dangling_links: list[VaultDanglingLink] = strawberry.field(
        description="The dangling links by source path and position, at most `first`"
    )

    @classmethod
    def from_model(cls, status: VaultStatus) -> VaultLinkStatus:
        return cls(
            vault=status.vault,
            notes=status.notes,
            links=status.links,
            resolved=status.resolved,
            dangling=status.dangling,
            ambiguous=status.ambiguous,
            dangling_links=[VaultDanglingLink.from_model(d) for d in status.dangling_links],
        )


@strawberry.type(description="A note of a project's reachable set")
class VaultReachedNote:
    id: strawberry.ID
    path: str


def _name(value: str, field: str) -> str:
    if not value.strip() or len(value) > _MAX_NAME:
        raise BadUserInput(f"{field} must be 1 to {_MAX_NAME} characters", field=field)
    return value


@strawberry.type
class VaultLinkQuery:
    @strawberry.field(
        description="A vault's note and wiki-link counts and its dangling links, over the "
        "notes you may read. An unknown vault, or one with no note you may read, reports "
        "zero counts"
    )
    async def vault_status(
        self, info: Info, vault: str, first: int | None = None
    ) -> VaultLinkStatus:
        context = info.context
        memory, visible = await context.scoped_memory()
        status = await context.services.links.vault_status(
            memory, _name(vault, "vault"), visibility=visible, first=first
        )
        return VaultLinkStatus.from_model(status)

    @strawberry.field(
        description="A project's reachable set in a vault, by path: its notes, and the "
        "shared notes its wiki links lead to, followed through shared notes only. Needs "
        "read access to the project; notes you may not read are left out"
    )
    async def vault_reach(self, info: Info, vault: str, project: str) -> list[VaultReachedNote]:
        context = info.context
        memory, visible = await context.scoped_memory()
        vault, project = _name(vault, "vault"), _name(project, "project")
        await context.authorize(Action.READ, Resource.of_note(memory, project, None))
        found = await context.services.links.reach_paths(memory, vault, project, visibility=visible)
        return [VaultReachedNote(id=strawberry.ID(str(i)), path=path) for i, path in found]
