"""The runtime: every long-lived object a server or worker process needs, built at the edge.

One :class:`Runtime` per process, opened after the backing services are reachable and
closed on shutdown. It is passed explicitly (the GraphQL context carries it); nothing reads
it from a global.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import dramatiq
import httpx
import redis.asyncio as redis
from starlette.applications import Starlette

from fortemi.auth import build_token_validator
from fortemi.auth.access import Authorizer
from fortemi.auth.audit import AUDIT_CHANNEL, AuditEntry, AuditKeyring, AuditWriter
from fortemi.auth.audit.export import to_row
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.auth.policy import (
    AccessDecisionEngine,
    CompositePolicyProvider,
    DatabasePolicyProvider,
    FilePolicyProvider,
    RedisCachedPolicyProvider,
)
from fortemi.auth.tokens import TokenValidator
from fortemi.inference import InferenceBackend, build_backend
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.events import EventBus
from fortemi.platform.jobs.events import JobEventPublisher
from fortemi.platform.jobs.models import Job
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.jobs.service import JobService
from fortemi.platform.memories import MemoryService
from fortemi.platform.memories.service import DEFAULT_MEMORY
from fortemi.platform.migrations import Migrations
from fortemi.platform.notes import NoteService
from fortemi.platform.notes.jobs import purge_note_type
from fortemi.platform.sealing import SecretBox
from fortemi.platform.settings import Settings
from fortemi.retrieval.indexing import (
    Chunking,
    EmbeddingEnqueuer,
    embedding_job_type,
    embedding_tier,
)
from fortemi.retrieval.search import SearchService
from fortemi.webhooks.delivery import DeliverySettings, webhook_delivery_type
from fortemi.webhooks.fanout import WebhookFanout
from fortemi.webhooks.service import WebhookService
from fortemi.webhooks.targets import TargetPolicy
from fortemi.workers.broker import build_broker
from fortemi.workers.dispatch import JobDispatcher
from fortemi.workers.dispatch import dispatch as dispatch_jobs
from fortemi.workers.loops import relay_once
from fortemi.workers.runtime import RegistryFactory

__all__ = ["Runtime", "job_registry"]

log = logging.getLogger(__name__)


def job_registry(settings: Settings, *, backend: InferenceBackend | None = None) -> RegistryFactory:
    """Every feature's job types, with services built on the worker's own database.

    Each feature declares its job types in its own package; this is the one place that
    registers them, so workers run them without knowing any by name. ``backend`` embeds
    for the ``Embedding`` job; by default one is built per registry (remote clients belong
    to the event loop that made them, and each worker has its own).
    """
    box = SecretBox.from_settings(settings)
    chunking = Chunking(
        size=settings.chunk_size, overlap=settings.chunk_overlap, batch=settings.embed_batch_size
    )
    delivery = DeliverySettings(
        policy=TargetPolicy.from_cidrs(settings.webhook_allowed_networks),
        timeout_seconds=settings.webhook_timeout_seconds,
        max_attempts=settings.webhook_max_attempts,
    )

    def factory(db: Database) -> JobRegistry:
        notes = NoteService(
            db,
            max_note_bytes=settings.max_note_bytes,
            max_page_size=settings.max_page_size,
            max_upsert_batch=settings.max_upsert_batch,
        )
        embedder = backend or build_backend(settings)
        registry = JobRegistry()
        registry.register(purge_note_type(notes))
        registry.register(webhook_delivery_type(db, box, delivery))
        registry.register(embedding_job_type(db, embedder, chunking, tier=embedding_tier(embedder)))
        return registry

    return factory


@dataclass
class Runtime:
    settings: Settings
    db: Database
    redis: redis.Redis
    migrations: Migrations
    memories: MemoryService
    notes: NoteService
    tokens: TokenValidator
    policies: RedisCachedPolicyProvider
    audit: AuditWriter
    authorizer: Authorizer
    jobs: JobService
    events: EventBus
    broker: dramatiq.Broker
    dispatcher: JobDispatcher
    issuer: LocalIssuer | None
    http: httpx.AsyncClient
    webhooks: WebhookService
    search: SearchService
    backend: InferenceBackend
    fanout: WebhookFanout | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def policy_store(self) -> DatabasePolicyProvider:
        """Where policies set through the API live (call ``policies.invalidate()`` after)."""
        composite = self.policies.inner
        assert isinstance(composite, CompositePolicyProvider)  # noqa: S101 - wiring invariant
        return composite.database

    @property
    def policy_files(self) -> FilePolicyProvider:
        composite = self.policies.inner
        assert isinstance(composite, CompositePolicyProvider)  # noqa: S101 - wiring invariant
        return composite.file

    @classmethod
    async def open(cls, settings: Settings, urls: ServiceUrls) -> Runtime:
        """Connect, apply shared migrations, make sure a default memory exists."""
        migrations = Migrations(settings.migrations_dir)
        keyring = AuditKeyring.from_settings(settings)  # a bad key fails before anything opens
        db = await Database.connect(
            urls.database,
            min_size=settings.db_pool_min,
            max_size=settings.db_pool_max,
            statement_timeout_ms=settings.db_statement_timeout_ms,
        )
        try:
            await migrations.migrate_shared(db)
            memories = MemoryService(db, migrations)
            await memories.ensure(DEFAULT_MEMORY, default=True)
        except BaseException:
            await db.close()
            raise
        issuer: LocalIssuer | None = None
        if settings.uses_local_issuer:
            issuer = LocalIssuer.load_or_create(
                settings.home, settings.issuer, settings.oidc_audience
            )
            # The local issuer's discovery document and JWKS are real endpoints (also
            # mounted on the public app); the validator reaches them in-process, through
            # the same discovery + JWKS code path a remote identity provider goes through.
            transport: httpx.AsyncBaseTransport = httpx.ASGITransport(
                app=Starlette(routes=issuer.routes())
            )
            http = httpx.AsyncClient(
                transport=transport, timeout=settings.oidc_http_timeout_seconds
            )
        else:
            http = httpx.AsyncClient(
                timeout=settings.oidc_http_timeout_seconds, follow_redirects=False
            )
        broker = redis.Redis.from_url(urls.redis)
        policies = RedisCachedPolicyProvider(
            CompositePolicyProvider(
                FilePolicyProvider(settings.policy_path), DatabasePolicyProvider(db)
            ),
            broker,
            refresh_seconds=settings.policy_refresh_seconds,
        )
        await policies.reload()

        async def publish(entries: Sequence[AuditEntry]) -> None:
            # Fan-out for auditEvents subscriptions; the log itself is already committed.
            for entry in entries:
                await broker.publish(AUDIT_CHANNEL, json.dumps(to_row(entry)))

        audit = AuditWriter(db, keyring=keyring, on_committed=publish)
        await audit.start()
        broker_for_jobs = build_broker(urls.redis)
        events = EventBus(broker)
        backend = build_backend(settings)  # loads or connects on first use only
        jobs = JobService(
            db, job_registry(settings, backend=backend)(db), events=JobEventPublisher(events)
        )
        dispatcher = JobDispatcher(broker_for_jobs)

        async def wake(pending: Sequence[Job]) -> None:
            await dispatch_jobs(jobs, dispatcher, pending)

        runtime = cls(
            settings=settings,
            db=db,
            redis=broker,
            migrations=migrations,
            memories=memories,
            notes=NoteService(
                db,
                max_note_bytes=settings.max_note_bytes,
                max_page_size=settings.max_page_size,
                max_upsert_batch=settings.max_upsert_batch,
                indexer=EmbeddingEnqueuer(jobs, wake, tier=embedding_tier(backend)),
            ),
            tokens=build_token_validator(settings, http),
            policies=policies,
            audit=audit,
            authorizer=Authorizer(AccessDecisionEngine(), policies, audit),
            # The API enqueues; workers (in this process under `serve`, or `fortemi worker`)
            # run jobs with their own service on their own event loop.
            jobs=jobs,
            events=events,
            broker=broker_for_jobs,
            dispatcher=dispatcher,
            issuer=issuer,
            http=http,
            webhooks=WebhookService(
                db,
                SecretBox.from_settings(settings),
                jobs,
                policy=TargetPolicy.from_cidrs(settings.webhook_allowed_networks),
            ),
            search=SearchService(db, backend),
            backend=backend,
        )
        runtime.fanout = WebhookFanout(broker, runtime.webhooks, runtime.dispatch_all)
        runtime.tasks.append(asyncio.create_task(runtime.policy_files.watch()))
        runtime.tasks.append(asyncio.create_task(runtime.fanout.run()))
        return runtime

    async def dispatch(self, job: Job) -> None:
        """Wake a worker for ``job`` (committed already); the relay covers a lost message."""
        await dispatch_jobs(self.jobs, self.dispatcher, [job])

    async def dispatch_all(self, jobs: Sequence[Job]) -> None:
        await dispatch_jobs(self.jobs, self.dispatcher, jobs)

    async def redispatch_due(self) -> None:
        """Wake workers for every runnable pending job now (after resuming, say)."""
        await relay_once(self.jobs, self.dispatcher, resend_after_seconds=0)

    async def close(self) -> None:
        self.broker.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.fanout is not None:
            await self.fanout.close()
        await self.audit.close()
        await self.backend.aclose()
        await self.http.aclose()
        await self.redis.aclose()
        await self.db.close()

    async def readiness(self) -> dict[str, Any]:
        """Check each backing service; a failing one is reported, never raised."""

        async def database() -> str:
            await self.db.fetchval("SELECT 1")
            return "ok"

        async def broker() -> str:
            await self.redis.ping()
            return "ok"

        checks: dict[str, Any] = {}
        for name, check in (("postgres", database), ("redis", broker)):
            try:
                checks[name] = await asyncio.wait_for(check(), timeout=2.0)
            except Exception as exc:
                log.warning("readiness check %s failed: %s", name, type(exc).__name__)
                checks[name] = f"unavailable: {type(exc).__name__}"
        return checks
