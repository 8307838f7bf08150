"""Knowledge shards through GraphQL: ``exportShard`` and ``importShard`` return jobs.

Both need memory ``admin`` (an export reads every note whatever its project's policy,
so nothing less may ask for one); an import reads a shard an earlier ``exportShard`` job
wrote on this server, and needs ``admin`` on that job's memory too. An export job the
caller may not administer is answered NOT_FOUND, like one that does not exist.
"""

from __future__ import annotations

from enum import Enum

import strawberry

from fortemi.auth.decision import Action, Resource
from fortemi.documents.shards.jobs import SHARD_EXPORT, export_spec, import_spec
from fortemi.graphql.context import Info
from fortemi.graphql.jobs import Job
from fortemi.platform.errors import BadUserInput, NotFound
from fortemi.platform.ids import parse_id
from fortemi.platform.jobs.models import JobStatus

__all__ = ["ShardMutation"]


@strawberry.enum(description="What a shard carries (README: Knowledge shards)")
class ShardProfile(Enum):
    CORE_V1 = "core-v1"
    FULL_V1 = "full-v1"


@strawberry.enum(description="What an import does with rows whose key the memory holds")
class ShardConflictPolicy(Enum):
    ERROR = "error"
    SKIP = "skip"
    REPLACE = "replace"
    MERGE = "merge"


async def _admin(info: Info, memory: str | None) -> str:
    name = await info.context.enter(memory) if memory else await info.context.memory()
    await info.context.authorize(Action.ADMIN, Resource.of_memory(name))
    return name


@strawberry.type
class ShardMutation:
    @strawberry.mutation(
        description="Export the memory as a shard (admin): a ShardExport job whose result "
        "names the file, its size, component counts and the loss report; download it from "
        "/shards/<job id>. encryptFor: sealed (MMPKE01) for those addresses' published keys"
    )
    async def export_shard(
        self,
        info: Info,
        memory: str | None = None,
        profile: ShardProfile = ShardProfile.FULL_V1,
        vectors: bool = True,
        encrypt_for: list[str] | None = None,
    ) -> Job:
        name = await _admin(info, memory)
        if encrypt_for:
            # Every address must name a published key before the job is queued.
            await info.context.services.encryption.recipients(encrypt_for)
        spec = export_spec(
            name,
            profile=profile.value,
            vectors=vectors,
            requested_by=info.context.caller.sub,
            encrypt_for=encrypt_for,
        )
        job, _ = await info.context.services.jobs.submit(spec)
        await info.context.services.wakeups.dispatch(job)
        return Job.from_model(job, internals=True)

    @strawberry.mutation(
        description="Import the shard a completed exportShard job wrote (admin on both "
        "memories): a ShardImport job; a refused shard fails it with the stable reason"
    )
    async def import_shard(
        self,
        info: Info,
        from_export: strawberry.ID,
        memory: str | None = None,
        on_conflict: ShardConflictPolicy = ShardConflictPolicy.ERROR,
        dry_run: bool = False,
    ) -> Job:
        name = await _admin(info, memory)
        source_id = parse_id(str(from_export), "Job")
        source = await info.context.services.jobs.get(source_id)
        # Not-found before forbidden: an export of a memory the caller may not administer
        # is answered as if it did not exist.
        if (
            source is None
            or source.type != SHARD_EXPORT
            or source.memory is None
            or not await info.context.may(Action.ADMIN, Resource.of_memory(source.memory))
        ):
            raise NotFound(f"No shard export job {from_export}", id=str(from_export))
        if source.status != JobStatus.COMPLETED:
            raise BadUserInput(
                f"Export job {from_export} is {source.status.value}; import it once completed",
                reason="shard_not_ready",
            )
        spec = import_spec(
            name,
            source_job=source_id,
            on_conflict=on_conflict.value,
            dry_run=dry_run,
            requested_by=info.context.caller.sub,
        )
        job, _ = await info.context.services.jobs.submit(spec)
        await info.context.services.wakeups.dispatch(job)
        return Job.from_model(job, internals=True)
