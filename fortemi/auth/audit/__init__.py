"""The tamper-evident audit log of authorization decisions.

Every decision (allow and deny) becomes a row of ``public.rbac_audit_log`` through an
:class:`AuditWriter` (the process's :class:`AuditSink`), chained per writer segment with a
keyed hash under the :class:`AuditKeyring`, segments chained in a registry (:mod:`.chain`),
re-checkable with :func:`verify` (against heads exported with :func:`export_heads`),
queried by auditors through the :class:`AuditService` (:func:`list_entries`,
:func:`stats`, :func:`verify`, and a live feed), and exported with
:func:`export`.
"""

from fortemi.auth.audit.export import export
from fortemi.auth.audit.heads import export_heads, read_heads
from fortemi.auth.audit.keys import AuditKeyring
from fortemi.auth.audit.models import (
    AuditBucket,
    AuditEntry,
    AuditFilter,
    AuditPage,
    AuditRecord,
    AuditSink,
    Pin,
    Verification,
)
from fortemi.auth.audit.repository import list_entries, stats
from fortemi.auth.audit.service import AuditService
from fortemi.auth.audit.verify import verify
from fortemi.auth.audit.writer import AUDIT_CHANNEL, AuditWriter

__all__ = [
    "AUDIT_CHANNEL",
    "AuditBucket",
    "AuditEntry",
    "AuditFilter",
    "AuditKeyring",
    "AuditPage",
    "AuditRecord",
    "AuditService",
    "AuditSink",
    "AuditWriter",
    "Pin",
    "Verification",
    "export",
    "export_heads",
    "list_entries",
    "read_heads",
    "stats",
    "verify",
]
