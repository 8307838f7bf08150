"""The tamper-evident audit log of authorization decisions.

Every decision (allow and deny) becomes a row of ``public.rbac_audit_log`` through an
:class:`AuditWriter` (the process's :class:`AuditSink`), hash-chained per writer segment
(:mod:`.chain`), re-checkable with :func:`verify`, queried by auditors with
:func:`list_entries` and :func:`stats`, and exported with :func:`export`.
"""

from fortemi.auth.audit.export import export
from fortemi.auth.audit.models import (
    AuditBucket,
    AuditEntry,
    AuditFilter,
    AuditPage,
    AuditRecord,
    AuditSink,
    Verification,
)
from fortemi.auth.audit.repository import list_entries, stats
from fortemi.auth.audit.verify import verify
from fortemi.auth.audit.writer import AuditWriter

__all__ = [
    "AuditBucket",
    "AuditEntry",
    "AuditFilter",
    "AuditPage",
    "AuditRecord",
    "AuditSink",
    "AuditWriter",
    "Verification",
    "export",
    "list_entries",
    "stats",
    "verify",
]
