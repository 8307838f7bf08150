"""The ``WebhookDelivery`` job type: one signed POST per run, every attempt recorded.

Payload ``{"delivery_id": "<uuid>"}``. A run loads the delivery and its webhook, signs the
stored body with the webhook's secret (``X-Fortemi-Signature`` over timestamp + body,
``X-Fortemi-Timestamp``, so a receiver can refuse replays), POSTs it through the SSRF
guard (:mod:`fortemi.webhooks.transport`), records the attempt, and answers with the job
outcome the response calls for: success on 2xx; a retry with the transport's class
(``transient``, ``rate_limited`` honouring ``Retry-After``, ``timeout``); a permanent
failure for a refused target, a cross-host redirect or a 4xx. A webhook deleted meanwhile
ends the job as done with ``{"skipped": "webhook_deleted"}``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from uuid import UUID

from fortemi.platform.database import Database
from fortemi.platform.jobs.models import FailureClass, HandlerContext, JobOutcome, JobType, Tier
from fortemi.platform.sealing import SealingError, SecretBox
from fortemi.webhooks.models import Attempt
from fortemi.webhooks.repository import WebhookRepository
from fortemi.webhooks.service import WEBHOOK_DELIVERY
from fortemi.webhooks.signing import signature_headers
from fortemi.webhooks.targets import TargetPolicy
from fortemi.webhooks.transport import DeliveryResult, deliver, new_client

__all__ = ["EVENT_HEADER", "DeliverySettings", "webhook_delivery_type"]

EVENT_HEADER = "X-Fortemi-Event"
DELIVERY_HEADER = "X-Fortemi-Delivery"


@dataclass(frozen=True)
class DeliverySettings:
    policy: TargetPolicy
    timeout_seconds: float = 10.0
    max_attempts: int = 8


def webhook_delivery_type(db: Database, box: SecretBox, settings: DeliverySettings) -> JobType:
    """The ``WebhookDelivery`` job type, delivering through ``db`` with secrets of ``box``."""
    repo = WebhookRepository()

    async def run(context: HandlerContext) -> JobOutcome:
        try:
            delivery_id = UUID(str(context.job.payload.get("delivery_id")))
        except ValueError:
            return JobOutcome.failure("invalid_payload")
        async with db.shared_transaction() as conn:
            row = await repo.load(conn, delivery_id)
        if row is None:
            return JobOutcome.success({"skipped": "webhook_deleted"})
        if row["status"] != "pending":
            return JobOutcome.success({"skipped": f"already_{row['status']}"})
        try:
            secret = box.open(row["secret_ciphertext"], row["webhook_id"].bytes)
        except SealingError:
            # Another FORTEMI_SECRET_KEY than the one that sealed it: an operator must fix it.
            return JobOutcome.failure("webhook_secret_unreadable")
        body: bytes = row["body"]
        headers = {
            **signature_headers(secret, int(time.time()), body),
            EVENT_HEADER: row["event_type"],
            DELIVERY_HEADER: str(delivery_id),
        }
        async with new_client() as client:
            result = await deliver(
                client,
                row["url"],
                body,
                headers,
                policy=settings.policy,
                timeout_seconds=settings.timeout_seconds,
            )
        last = result.outcome != "retry" or context.job.attempts >= context.job.max_attempts
        final = None if not last else ("delivered" if result.outcome == "delivered" else "failed")
        async with db.shared_transaction() as conn:
            await repo.record_attempt(conn, delivery_id, _attempt(context, result), final)
        return _outcome(result)

    return JobType(
        name=WEBHOOK_DELIVERY,
        tier=Tier.CPU,
        priority=6,
        handler=run,
        max_attempts=settings.max_attempts,
    )


def _attempt(context: HandlerContext, result: DeliveryResult) -> Attempt:
    return Attempt(
        attempt=context.job.attempts,
        at=context.job.started_at or context.job.created_at,  # the row's default wins
        outcome=result.outcome,
        status_code=result.status_code,
        failure_class=result.failure_class,
        code=result.code,
        duration_ms=result.duration_ms,
        response_excerpt=result.response_excerpt,
    )


def _outcome(result: DeliveryResult) -> JobOutcome:
    if result.outcome == "delivered":
        return JobOutcome.success({"statusCode": result.status_code})
    code = result.code or "delivery_failed"
    if result.outcome == "failed":
        return JobOutcome.failure(code)
    return JobOutcome.retry(
        result.failure_class or FailureClass.TRANSIENT,
        code,
        after_seconds=result.retry_after_seconds,
    )
