"""The Dramatiq broker: one Redis queue per tier, one ``wake`` actor per queue.

A message is a wake-up, not a job: ``wake(job_id)`` says "there is runnable work in this
tier, one such job is ``job_id``". The worker that receives it claims the *best* runnable
job of its tiers from PostgreSQL, which may be another job than the one named. So:

* priority holds under a backlog (messages arrive in send order; claims do not);
* a duplicate, late or stale message is harmless: the claim finds nothing, or finds other
  work that was due anyway;
* retries are ours, recorded in ``public.job``; Dramatiq never re-runs a message
  (``max_retries=0``), and the actors never raise for a job's failure.

Global broker: nothing here calls :func:`dramatiq.set_broker` or relies on
:func:`dramatiq.get_broker`. Actors are declared on the broker passed to them, so a
process (or a test session) may build several brokers side by side. The only code that
would need the global is the ``dramatiq`` command-line runner, which Fortemi does not use:
``fortemi worker`` runs :class:`dramatiq.Worker` itself (see :mod:`fortemi.workers.runtime`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import Middleware, Retries

from fortemi.platform.jobs.models import Tier

__all__ = [
    "DEFAULT_NAMESPACE",
    "WakeReceiver",
    "actor_name",
    "build_broker",
    "queue_name",
    "wake_actor",
]

log = logging.getLogger(__name__)

DEFAULT_NAMESPACE = "fortemi"


def queue_name(tier: Tier) -> str:
    """The Redis queue of ``tier``: the tier's own name (``cpu``, ``fast_gpu``, ...)."""
    return tier.value


def actor_name(tier: Tier) -> str:
    # Actor names are unique per broker; one actor per queue keeps routing by queue only.
    return f"wake_{tier.value}"


class WakeReceiver(Middleware):
    """The middleware that turns a ``wake`` message into work; the worker side installs one.

    A broker has at most one receiver at a time (the running worker's). Its
    :meth:`receive` runs on a Dramatiq worker thread and blocks until that wake-up has been
    handled; it must not raise for anything a job did (the message is only a nudge).
    """

    def receive(self, tier: Tier, job_id: str) -> None:
        raise NotImplementedError


def _receiver(broker: dramatiq.Broker) -> WakeReceiver | None:
    for middleware in broker.middleware:
        if isinstance(middleware, WakeReceiver):
            return middleware
    return None


def _wake_function(broker: dramatiq.Broker, tier: Tier) -> Callable[[str], None]:
    def wake(job_id: str) -> None:
        receiver = _receiver(broker)
        if receiver is None:
            # Only a worker consumes, and it installs its receiver before it boots; this is
            # a wiring bug. Dropping the nudge is safe: the relay re-sends pending jobs.
            log.error("wake(%s) on %s reached a broker without a receiver", job_id, tier)
            return
        receiver.receive(tier, job_id)

    wake.__name__ = actor_name(tier)
    wake.__qualname__ = actor_name(tier)
    return wake


def build_broker(redis_url: str, *, namespace: str = DEFAULT_NAMESPACE) -> RedisBroker:
    """A Redis broker with the three tier queues and their ``wake`` actors declared.

    Middleware, deliberately few: :class:`~dramatiq.middleware.Retries` only so actors can
    say ``max_retries=0`` (Dramatiq's own advice for "never retry"); no ``TimeLimit``
    (a job's time is governed by its lease and heartbeat, and TimeLimit would raise into
    whatever the worker thread is doing), no ``AgeLimit`` (an old wake-up is still a valid
    nudge), no callbacks or pipelines (messages carry ids, never results). A worker adds
    its :class:`WakeReceiver` when it starts.

    ``namespace`` prefixes every Redis key, so brokers with different namespaces on one
    Redis never see each other's messages (tests use that).
    """
    # RedisBroker.__init__ carries no annotations in Dramatiq 2.x.
    broker = RedisBroker(  # type: ignore[no-untyped-call]
        url=redis_url, namespace=namespace, middleware=[Retries(max_retries=0)]
    )
    for tier in Tier:
        declare = dramatiq.actor(
            broker=broker, actor_name=actor_name(tier), queue_name=queue_name(tier), max_retries=0
        )
        declare(_wake_function(broker, tier))
    return broker


def wake_actor(broker: dramatiq.Broker, tier: Tier) -> dramatiq.Actor[[str], None]:
    """The ``wake`` actor of ``tier`` on ``broker`` (declared by :func:`build_broker`)."""
    actor: dramatiq.Actor[[str], None] = broker.get_actor(actor_name(tier))
    return actor
