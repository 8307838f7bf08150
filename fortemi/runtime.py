"""The composition root: every long-lived object a server process needs, built once.

One :class:`Runtime` per process, opened after the backing services are reachable and
closed on shutdown. It builds each service once and hands the GraphQL layer only those
(:class:`~fortemi.graphql.services.Services`); nothing reads it from a global.

Every resource is opened in one :class:`contextlib.AsyncExitStack`, one step at a time
(:data:`STEPS`): a step that fails unwinds the stack, so whatever the steps before it
opened is closed before the error propagates, and :meth:`Runtime.close` is the same
unwinding, in reverse order of opening.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from uuid import UUID

import dramatiq
import httpx
import redis.asyncio as redis
from starlette.applications import Starlette

from fortemi.auth import build_token_validator
from fortemi.auth.access import Authorizer
from fortemi.auth.audit import AuditKeyring, AuditService, AuditWriter
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.auth.policy import AccessDecisionEngine, PolicyService, build_policy_service
from fortemi.auth.tokens import TokenValidator
from fortemi.console import program_version
from fortemi.crypto.directory import KeyDirectory
from fortemi.crypto.service import EncryptionService
from fortemi.documents.attachments.jobs import (
    AttachmentPieces,
    PendingExtractions,
    extraction_job_type,
)
from fortemi.documents.attachments.service import AttachmentService
from fortemi.documents.attachments.storage import BlobStore, build_blob_store, staging_dir
from fortemi.documents.chunking import CodeChunker
from fortemi.documents.extraction.library import LibraryExtractor
from fortemi.documents.service import DocumentTypeService
from fortemi.documents.shards import BlobBytes, ShardService
from fortemi.documents.shards.jobs import ShardFiles, shard_job_types
from fortemi.graph.backfill import GraphBackfill, graph_backfill_type, startup_specs
from fortemi.graph.linking.jobs import linking_followups, linking_job_type
from fortemi.graph.linking.service import LinkingSettings, NoteLinker
from fortemi.graph.links import LinkService, WikiLinkIndexer
from fortemi.graph.maintenance.jobs import maintenance_job_type
from fortemi.graph.maintenance.plan import MaintenanceSettings
from fortemi.graph.maintenance.service import GraphMaintenance
from fortemi.graph.tagging.content_type import DetectedContentTypes
from fortemi.graph.tagging.jobs import (
    ConceptTaggingEnqueuer,
    concept_tagging_type,
    tagging_spec,
)
from fortemi.graph.tagging.models import TaggingSettings
from fortemi.graph.tagging.related import related_concept_inference_type
from fortemi.graph.traversal import TraversalService
from fortemi.graph.vocabulary import VocabularyService
from fortemi.graph.vocabulary.indexer import PathTagIndexer
from fortemi.graph.vocabulary.paths import ConceptPaths
from fortemi.graphql.services import Services
from fortemi.inference import InferenceBackend, build_backend
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.events import EventBus
from fortemi.platform.jobs.events import JobEventPublisher
from fortemi.platform.jobs.models import JobSpec
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.jobs.service import JobService
from fortemi.platform.memories import MemoryService
from fortemi.platform.memories.service import DEFAULT_MEMORY
from fortemi.platform.migrations import Migrations
from fortemi.platform.notes import NoteService
from fortemi.platform.notes.jobs import purge_note_type
from fortemi.platform.notes.service import NoteIndexer
from fortemi.platform.sealing import SecretBox
from fortemi.platform.settings import Settings
from fortemi.retrieval.backfill import embedding_backfill_type
from fortemi.retrieval.chunking import chunk_text
from fortemi.retrieval.indexing import (
    Chunking,
    EmbeddingEnqueuer,
    embedding_job_type,
    embedding_spec,
    embedding_tier,
)
from fortemi.retrieval.scoped import ScopedRetrieval
from fortemi.retrieval.search import SearchService
from fortemi.retrieval.service import ChunkVectorService
from fortemi.retrieval.sets import EmbeddingSets
from fortemi.webhooks.delivery import DeliverySettings, webhook_delivery_type
from fortemi.webhooks.fanout import WebhookFanout
from fortemi.webhooks.service import WebhookService
from fortemi.webhooks.targets import TargetPolicy
from fortemi.wiki.answers.service import AnswerService, AnswerSettings
from fortemi.wiki.retrieve.models import PlanSettings
from fortemi.wiki.retrieve.scope import LinkedReach
from fortemi.wiki.retrieve.service import RetrievalPlanner
from fortemi.wiki.vaults import VaultService
from fortemi.workers.broker import build_broker
from fortemi.workers.dispatch import JobDispatcher
from fortemi.workers.runtime import RegistryFactory
from fortemi.workers.wakeups import Wakeups

__all__ = ["STEPS", "Runtime", "job_registry"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def linking_settings(settings: Settings) -> LinkingSettings:
    return LinkingSettings(
        min_score=settings.link_min_score, k_min=settings.link_k_min, k_max=settings.link_k_max
    )


def plan_settings(settings: Settings) -> PlanSettings:
    """The wiki retrieval plan's settings (``FORTEMI_WIKI_*``)."""
    return PlanSettings(
        documents=settings.wiki_documents,
        top_chunks=settings.wiki_top_chunks,
        tfidf_weight=settings.wiki_tfidf_weight,
        semantic_weight=settings.wiki_semantic_weight,
        metadata_boost=settings.wiki_metadata_boost,
        min_relevance=settings.wiki_min_relevance,
        relative_relevance=settings.wiki_relative_relevance,
        min_lexical_relevance=settings.wiki_min_lexical_relevance,
        duplicate_jaccard=settings.wiki_duplicate_jaccard,
    )


def answer_settings(settings: Settings) -> AnswerSettings:
    """The answers' generation settings (``FORTEMI_ANSWER_*``)."""
    return AnswerSettings(
        max_tokens=settings.answer_max_tokens,
        retry_max_tokens=settings.answer_retry_max_tokens,
        temperature=settings.answer_temperature,
    )


def maintenance_settings(settings: Settings) -> MaintenanceSettings:
    return MaintenanceSettings(
        k_min=settings.link_k_min,
        k_max=settings.link_k_max,
        gamma=settings.graph_gamma,
        resolution=settings.graph_resolution,
    )


def job_registry(settings: Settings, *, backend: InferenceBackend | None = None) -> RegistryFactory:
    """Every feature's job types, with services built on the worker's own database.

    Each feature declares its job types in its own package; this is the one place that
    registers them, so workers run them without knowing any by name. ``backend`` embeds
    for the ``Embedding`` job; by default one is built per registry (remote clients belong
    to the event loop that made them, and each worker has its own).
    """
    box = SecretBox.from_settings(settings)
    chunking = Chunking(
        size=settings.chunk_size,
        overlap=settings.chunk_overlap,
        batch=settings.embed_batch_size,
        # Code notes cut at their functions and classes; every other format as before.
        chunker=CodeChunker(chunk_text),
    )
    delivery = DeliverySettings(
        policy=TargetPolicy.from_cidrs(settings.webhook_allowed_networks),
        timeout_seconds=settings.webhook_timeout_seconds,
        max_attempts=settings.webhook_max_attempts,
    )
    tagging = TaggingSettings.from_settings(settings)
    store = build_blob_store(settings)
    extractor = LibraryExtractor.from_settings(settings)

    def factory(db: Database) -> JobRegistry:
        notes = NoteService(
            db,
            max_note_bytes=settings.max_note_bytes,
            max_page_size=settings.max_page_size,
            max_upsert_batch=settings.max_upsert_batch,
        )
        embedder = backend or build_backend(settings)
        tier = embedding_tier(embedder)
        documents = DocumentTypeService(db, chunk_text)
        attachments = attachment_service(settings, db, store, documents, notes)
        registry = JobRegistry()
        # Purged notes take their attachments' rows along; their blobs go when unused.
        registry.register(purge_note_type(notes, after=attachments.sweep))
        # Extraction first (priority 6, above Embedding's 4); a note's embedding waits for
        # its pending extractions and is enqueued again by each one that ends.
        registry.register(
            extraction_job_type(
                attachments,
                documents,
                extractor,
                followups=lambda memory, note_id: [
                    embedding_spec(memory, note_id, tier),
                    tagging_spec(memory, note_id),
                ],
            )
        )
        registry.register(webhook_delivery_type(db, box, delivery))
        registry.register(
            embedding_job_type(
                db,
                embedder,
                chunking,
                tier=tier,
                followups=linking_followups,
                # Tag-enriched embedding: the composition includes concept paths.
                concepts=ConceptPaths(),
                enrich=settings.embed_concepts,
                gate=PendingExtractions(attachments),
                # A note's vectors cover its extracted attachments too.
                extra=AttachmentPieces(attachments),
            )
        )
        registry.register(embedding_backfill_type(db, tier=tier))
        # Without an event bus here: the tagging job publishes its concept events itself,
        # through its job context, under the job's correlation id. Concepts also weigh in
        # linking scores and name communities.
        vocabulary = VocabularyService(db)

        def reembed(memory: str, note_id: UUID) -> list[JobSpec]:
            return [embedding_spec(memory, note_id, tier)]

        registry.register(
            concept_tagging_type(
                db,
                vocabulary,
                embedder,
                tagging,
                followups=reembed if settings.embed_concepts else None,
                # The cpu tier's content_type concept: the note's detected document type.
                content_types=DetectedContentTypes(documents),
                gate=PendingExtractions(attachments),
            )
        )
        registry.register(
            related_concept_inference_type(db, vocabulary, floor=tagging.related_floor)
        )
        vectors = ChunkVectorService(db, embedder, concepts=settings.embed_concepts)
        registry.register(
            linking_job_type(
                NoteLinker(db, vocabulary, linking_settings(settings), vectors=vectors)
            )
        )
        registry.register(
            maintenance_job_type(GraphMaintenance(db, vocabulary, maintenance_settings(settings)))
        )
        shards = ShardService(
            db,
            BlobBytes(store, staging_dir(settings)),
            producer=f"fortemi {program_version()}",
            after_import=[EmbeddingSets().index_all],
        )
        files = ShardFiles.under(settings.home)
        encryption = EncryptionService(KeyDirectory(db))
        for job_type in shard_job_types(shards, files, encryption):
            registry.register(job_type)
        registry.register(graph_backfill_type(GraphBackfill(db, vectors)))
        if settings.graph_backfill_on_start:
            memories = MemoryService(db, Migrations(settings.migrations_dir))

            async def sweeps() -> list[JobSpec]:
                names = [memory.name for memory in await memories.list()]
                return startup_specs(names, limit=settings.graph_backfill_limit)

            # Notes without their tagging or links (written before the graph, or whose jobs
            # were lost) get them: one deduplicated sweep per memory at each worker start.
            registry.on_start(sweeps)
        return registry

    return factory


def attachment_service(
    settings: Settings,
    db: Database,
    store: BlobStore,
    documents: DocumentTypeService,
    notes: NoteService,
    jobs: JobService | None = None,
    dispatch: Callable[[Any], Awaitable[None]] | None = None,
) -> AttachmentService:
    return AttachmentService(
        db,
        store,
        documents,
        notes,
        jobs,
        staging=staging_dir(settings),
        max_upload_bytes=settings.max_upload_bytes,
        dispatch=dispatch,
    )


@dataclass
class _Parts:
    """What :meth:`Runtime.open` has built so far; each step fills in its part and
    pushes what closes it on ``stack``."""

    settings: Settings
    urls: ServiceUrls
    stack: contextlib.AsyncExitStack
    keyring: AuditKeyring
    migrations: Migrations
    db: Database | None = None
    memories: MemoryService | None = None
    issuer: LocalIssuer | None = None
    http: httpx.AsyncClient | None = None
    redis: redis.Redis | None = None
    policies: PolicyService | None = None
    audit_log: AuditService | None = None
    audit: AuditWriter | None = None
    broker: dramatiq.Broker | None = None
    backend: InferenceBackend | None = None
    watcher: asyncio.Task[None] | None = None
    fanout: WebhookFanout | None = None
    fanout_task: asyncio.Task[None] | None = None
    services: Services | None = None
    dispatcher: JobDispatcher | None = None
    wakeups: Wakeups | None = None


def _built(part: T | None, name: str) -> T:
    """A part an earlier step built; its absence is a mistake in :data:`STEPS`' order."""
    if part is None:
        raise RuntimeError(f"runtime step order: {name} is used before it is built")
    return part


async def _open_database(parts: _Parts) -> None:
    """Connect, apply shared migrations, make sure a default memory exists."""
    settings = parts.settings
    db = await Database.connect(
        parts.urls.database,
        min_size=settings.db_pool_min,
        max_size=settings.db_pool_max,
        statement_timeout_ms=settings.db_statement_timeout_ms,
    )
    parts.stack.push_async_callback(db.close)
    parts.db = db
    await parts.migrations.migrate_shared(db)


async def _open_http(parts: _Parts) -> None:
    settings = parts.settings
    if settings.uses_local_issuer:
        issuer = LocalIssuer.load_or_create(settings.home, settings.issuer, settings.oidc_audience)
        # The local issuer's discovery document and JWKS are real endpoints (also mounted
        # on the public app); the validator reaches them in-process, through the same
        # discovery + JWKS code path a remote identity provider goes through.
        transport: httpx.AsyncBaseTransport = httpx.ASGITransport(
            app=Starlette(routes=issuer.routes())
        )
        http = httpx.AsyncClient(transport=transport, timeout=settings.oidc_http_timeout_seconds)
        parts.issuer = issuer
    else:
        http = httpx.AsyncClient(timeout=settings.oidc_http_timeout_seconds, follow_redirects=False)
    parts.stack.push_async_callback(http.aclose)
    parts.http = http


async def _open_redis(parts: _Parts) -> None:
    client = redis.Redis.from_url(parts.urls.redis)
    parts.stack.push_async_callback(client.aclose)
    parts.redis = client


async def _open_policies(parts: _Parts) -> None:
    policies = build_policy_service(
        parts.settings.policy_path,
        _built(parts.db, "db"),
        _built(parts.redis, "redis"),
        refresh_seconds=parts.settings.policy_refresh_seconds,
    )
    await policies.reload()
    parts.policies = policies


async def _open_memories(parts: _Parts) -> None:
    memories = MemoryService(
        _built(parts.db, "db"),
        parts.migrations,
        policies=_built(parts.policies, "policies").memory_policies(),
    )
    await memories.ensure(DEFAULT_MEMORY, default=True)
    parts.memories = memories


async def _open_audit(parts: _Parts) -> None:
    db = _built(parts.db, "db")
    audit_log = AuditService(db, parts.keyring, _built(parts.redis, "redis"))
    writer = AuditWriter(db, keyring=parts.keyring, on_committed=audit_log.publish)
    await parts.stack.enter_async_context(writer)
    parts.audit_log, parts.audit = audit_log, writer


async def _open_job_broker(parts: _Parts) -> None:
    broker = build_broker(parts.urls.redis)
    parts.stack.callback(broker.close)
    parts.broker = broker
    parts.dispatcher = JobDispatcher(broker)


async def _open_backend(parts: _Parts) -> None:
    backend = build_backend(parts.settings)  # loads or connects on first use only
    parts.stack.push_async_callback(backend.aclose)
    parts.backend = backend


def _build_services(parts: _Parts) -> Services:
    settings = parts.settings
    db = _built(parts.db, "db")
    backend = _built(parts.backend, "backend")
    events = EventBus(_built(parts.redis, "redis"))
    # The API enqueues; workers (in this process under `serve`, or `fortemi worker`) run
    # jobs with their own service on their own event loop.
    jobs = JobService(
        db, job_registry(settings, backend=backend)(db), events=JobEventPublisher(events)
    )
    wakeups = Wakeups(jobs, _built(parts.dispatcher, "dispatcher"))
    parts.wakeups = wakeups
    policies = _built(parts.policies, "policies")
    keys = KeyDirectory(db)
    embeddings = EmbeddingEnqueuer(jobs, wakeups.dispatch_all, tier=embedding_tier(backend))
    # With tag-enriched embeddings, a note's vectors follow its concepts (tagNoteConcepts,
    # untagNoteConcept); the tagging job does the same through its followups.
    followers: list[NoteIndexer] = [embeddings] if settings.embed_concepts else []
    vocabulary = VocabularyService(db, events=events, followers=followers)
    notes = NoteService(
        db,
        max_note_bytes=settings.max_note_bytes,
        max_page_size=settings.max_page_size,
        max_upsert_batch=settings.max_upsert_batch,
        indexers=[
            WikiLinkIndexer(events),
            embeddings,
            # Path tags (a/b/c) become the note's user concepts in its transaction.
            PathTagIndexer(vocabulary, events),
            ConceptTaggingEnqueuer(jobs, wakeups.dispatch_all),
        ],
    )
    links = LinkService(db, max_links=settings.max_list_items)
    documents = DocumentTypeService(db, chunk_text)
    attachments = attachment_service(
        settings, db, build_blob_store(settings), documents, notes, jobs, wakeups.dispatch_all
    )
    scoped = ScopedRetrieval(db, backend, concepts=settings.embed_concepts)
    planner = RetrievalPlanner(
        scoped,
        plan_settings(settings),
        # A project's scope is its wiki graph: its notes and the shared notes its links
        # reach through shared notes only.
        resolver=LinkedReach(links, scoped),
    )
    return Services(
        settings=settings,
        tokens=build_token_validator(settings, _built(parts.http, "http")),
        authorizer=Authorizer(AccessDecisionEngine(), policies, _built(parts.audit, "audit")),
        audit=_built(parts.audit_log, "audit_log"),
        policies=policies,
        memories=_built(parts.memories, "memories"),
        notes=notes,
        vaults=VaultService(notes, policies, max_file_bytes=settings.max_note_bytes),
        links=links,
        search=SearchService(
            db,
            backend,
            concepts=settings.embed_concepts,
            pruning=settings.lexical_pruning,
            cached_queries=settings.query_embedding_cache,
            segment_postings=settings.lexical_segment_postings,
        ),
        retrieve=planner,
        answers=AnswerService(planner, backend, answer_settings(settings)),
        traversal=TraversalService(
            db,
            gamma=settings.graph_gamma,
            concepts=vocabulary,
            segment_links=settings.graph_segment_links,
        ),
        maintenance=GraphMaintenance(db, vocabulary, maintenance_settings(settings)),
        jobs=jobs,
        wakeups=wakeups,
        webhooks=WebhookService(
            db,
            SecretBox.from_settings(settings),
            jobs,
            policy=TargetPolicy.from_cidrs(settings.webhook_allowed_networks),
        ),
        events=events,
        vocabulary=vocabulary,
        documents=documents,
        attachments=attachments,
        keys=keys,
        encryption=EncryptionService(keys),
    )


async def _open_services(parts: _Parts) -> None:
    parts.services = _build_services(parts)
    # Lexical and traversal segments are built by tasks of this loop: stopped before the
    # pool closes.
    parts.stack.push_async_callback(parts.services.search.close)
    parts.stack.push_async_callback(parts.services.traversal.close)


async def _start_policy_watcher(parts: _Parts) -> None:
    policies = _built(parts.policies, "policies")
    stop = asyncio.Event()
    task = asyncio.create_task(policies.watch_files(stop))

    async def finish() -> None:
        # Stopped through its event, never cancelled: see FilePolicyProvider.watch.
        stop.set()
        await task

    parts.stack.push_async_callback(finish)
    parts.watcher = task


async def _start_fanout(parts: _Parts) -> None:
    services = _built(parts.services, "services")
    fanout = WebhookFanout(
        _built(parts.redis, "redis"),
        services.webhooks,
        _built(parts.wakeups, "wakeups").dispatch_all,
    )
    parts.stack.push_async_callback(fanout.close)
    task = asyncio.create_task(fanout.run())
    parts.stack.push_async_callback(_cancelled, task)
    parts.fanout, parts.fanout_task = fanout, task


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


Step = Callable[[_Parts], Awaitable[None]]
STEPS: tuple[Step, ...] = (
    _open_database,
    _open_http,
    _open_redis,
    _open_policies,
    _open_memories,
    _open_audit,
    _open_job_broker,
    _open_backend,
    _open_services,
    _start_policy_watcher,
    _start_fanout,
)
"""The steps of :meth:`Runtime.open`, in order."""


@dataclass
class Runtime:
    settings: Settings
    db: Database
    redis: redis.Redis
    migrations: Migrations
    issuer: LocalIssuer | None
    http: httpx.AsyncClient
    audit: AuditWriter
    broker: dramatiq.Broker
    backend: InferenceBackend
    services: Services
    _stack: contextlib.AsyncExitStack = field(repr=False)

    def __post_init__(self) -> None:
        # The services see the runtime's settings: a variant made with other settings
        # (``dataclasses.replace``; tests serve production mode that way) hands them on.
        if self.services.settings is not self.settings:
            self.services = dataclasses.replace(self.services, settings=self.settings)

    @property
    def memories(self) -> MemoryService:
        return self.services.memories

    @property
    def notes(self) -> NoteService:
        return self.services.notes

    @property
    def policies(self) -> PolicyService:
        return self.services.policies

    @property
    def tokens(self) -> TokenValidator:
        return self.services.tokens

    @property
    def jobs(self) -> JobService:
        return self.services.jobs

    @classmethod
    async def open(cls, settings: Settings, urls: ServiceUrls) -> Runtime:
        """Open every resource, in :data:`STEPS` order; if one fails, close the others."""
        async with contextlib.AsyncExitStack() as stack:
            parts = _Parts(
                settings=settings,
                urls=urls,
                stack=stack,
                keyring=AuditKeyring.from_settings(settings),  # a bad key fails first
                migrations=Migrations(settings.migrations_dir),
            )
            for step in STEPS:
                await step(parts)
            runtime = cls(
                settings=settings,
                db=_built(parts.db, "db"),
                redis=_built(parts.redis, "redis"),
                migrations=parts.migrations,
                issuer=parts.issuer,
                http=_built(parts.http, "http"),
                audit=_built(parts.audit, "audit"),
                broker=_built(parts.broker, "broker"),
                backend=_built(parts.backend, "backend"),
                services=_built(parts.services, "services"),
                _stack=stack.pop_all(),
            )
        return runtime

    async def close(self) -> None:
        """Close everything :meth:`open` opened, newest first."""
        await self._stack.aclose()

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
