"""What the GraphQL layer is handed: services, each owning its invariants.

Resolvers reach these through ``info.context.services`` and nothing else: no database
pool, no Redis client. The composition root (:mod:`fortemi.runtime`) builds one
:class:`Services` per process; the GraphQL layer never imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from fortemi.auth.access import Authorizer
from fortemi.auth.audit import AuditService
from fortemi.auth.policy import PolicyService
from fortemi.auth.tokens import TokenValidator
from fortemi.crypto.directory import KeyDirectory
from fortemi.crypto.service import EncryptionService
from fortemi.documents.attachments.service import AttachmentService
from fortemi.documents.service import DocumentTypeService
from fortemi.graph.links import LinkService
from fortemi.graph.maintenance.service import GraphMaintenance
from fortemi.graph.traversal import TraversalService
from fortemi.graph.vocabulary import VocabularyService
from fortemi.platform.events import EventBus
from fortemi.platform.jobs.models import Job
from fortemi.platform.jobs.service import JobService
from fortemi.platform.memories import MemoryService
from fortemi.platform.notes import NoteService
from fortemi.platform.settings import Settings
from fortemi.retrieval.search import SearchService
from fortemi.webhooks.service import WebhookService
from fortemi.wiki.answers.service import AnswerService
from fortemi.wiki.retrieve.service import RetrievalPlanner
from fortemi.wiki.vaults import VaultService

__all__ = ["JobWakeups", "Services"]


class JobWakeups(Protocol):
    """Wakes workers for jobs already committed (a lost wake-up is re-sent by the relay)."""

    async def dispatch(self, job: Job) -> None: ...

    async def redispatch_due(self) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    settings: Settings
    tokens: TokenValidator
    authorizer: Authorizer
    audit: AuditService
    policies: PolicyService
    memories: MemoryService
    notes: NoteService
    vaults: VaultService
    links: LinkService
    search: SearchService
    retrieve: RetrievalPlanner
    answers: AnswerService
    traversal: TraversalService
    maintenance: GraphMaintenance
    jobs: JobService
    wakeups: JobWakeups
    webhooks: WebhookService
    events: EventBus
    vocabulary: VocabularyService
    documents: DocumentTypeService
    attachments: AttachmentService
    keys: KeyDirectory  # published public keys (encryptFor resolves against them)
    encryption: EncryptionService
