"""Process metrics in the Prometheus text format (prometheus-client).

Every metric is declared here, once, in the process's default registry, so a worker
thread, the audit writer and the GraphQL layer record into the same place and
``GET /metrics`` (or a worker's metrics port) shows them all. Labels take only bounded
values: route templates, GraphQL error codes, tiers, job types the registry knows, and
operation names through :func:`operation_label`, which caps how many distinct names one
process will keep (operation names come from clients).

What is counted where:

* ``fortemi_http_*``: every HTTP request, by route template, method and status (the ASGI
  middleware in :mod:`fortemi.app`), so 401s and 413s answered before GraphQL count too.
* ``fortemi_graphql_*``: each GraphQL operation by name and type, its latency, and the
  ``extensions.code`` of each error it returned.
* ``fortemi_jobs``: jobs pending and running, per tier, read from PostgreSQL at each
  scrape (so every replica reports the same shared truth); ``fortemi_embedding_backlog``
  likewise. ``fortemi_job_*``: what this process's workers ran, by tier, type and outcome.
* ``fortemi_audit_write_seconds``: how long committing a batch of audit rows took.
* ``fortemi_policy_reloads_total``: policy set reloads by trigger and outcome.
* ``fortemi_retrieval_plan_seconds``: each retrieval plan the planner was asked for
  (``retrieve``, ``ask``, ``askStream``), by scope and outcome (``answered``, the reason it
  abstained, or ``error``). A question refused before the planner (a project the caller
  may not read) is not counted: nothing was searched for it.
* ``fortemi_generation_*``: the answers' model calls (:mod:`fortemi.wiki.answers`) that
  finished or failed, by tier, model and outcome (``stop``, ``length``, ``empty``,
  ``error``), their duration, and their tokens: the prompt's as the plan counted them,
  those the server evaluated (Ollama's ``prompt_eval_count``: fewer when its prefix cache
  held the rest) and the answer's. A failed call's model is the one its request named
  when the server answered, else ``unknown`` (no answer at all: refused, timed out).
"""

from __future__ import annotations

import re
import threading

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

__all__ = [
    "AUDIT_WRITE_SECONDS",
    "CONTENT_TYPE",
    "EMBEDDING_BACKLOG",
    "GENERATION_CALLS",
    "GENERATION_SECONDS",
    "GENERATION_TOKENS",
    "GRAPHQL_ERRORS",
    "GRAPHQL_OPERATIONS",
    "GRAPHQL_OPERATION_SECONDS",
    "HTTP_REQUESTS",
    "HTTP_REQUEST_SECONDS",
    "JOBS",
    "JOBS_FINISHED",
    "JOB_SECONDS",
    "POLICY_RELOADS",
    "RETRIEVAL_PLAN_SECONDS",
    "exposition",
    "operation_label",
]

CONTENT_TYPE = CONTENT_TYPE_LATEST

# Latency buckets from 5 ms to a minute: API calls sit at the low end, jobs at the high.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

HTTP_REQUESTS = Counter(
    "fortemi_http_requests_total",
    "HTTP requests by route template, method and status",
    ["route", "method", "status"],
)
HTTP_REQUEST_SECONDS = Histogram(
    "fortemi_http_request_duration_seconds",
    "HTTP request latency by route template and method",
    ["route", "method"],
    buckets=_BUCKETS,
)
GRAPHQL_OPERATIONS = Counter(
    "fortemi_graphql_operations_total",
    "GraphQL operations by operation name, type and outcome (ok or error)",
    ["operation", "type", "outcome"],
)
GRAPHQL_OPERATION_SECONDS = Histogram(
    "fortemi_graphql_operation_duration_seconds",
    "GraphQL operation latency by operation name and type",
    ["operation", "type"],
    buckets=_BUCKETS,
)
GRAPHQL_ERRORS = Counter(
    "fortemi_graphql_errors_total", "GraphQL errors returned, by extensions.code", ["code"]
)
JOBS = Gauge("fortemi_jobs", "Jobs pending or running, by tier (at scrape)", ["tier", "status"])
EMBEDDING_BACKLOG = Gauge(
    "fortemi_embedding_backlog", "Embedding jobs pending or running, in every memory (at scrape)"
)
JOBS_FINISHED = Counter(
    "fortemi_job_runs_total",
    "Job runs this process's workers finished, by tier, type and the status they left",
    ["tier", "type", "status"],
)
JOB_SECONDS = Histogram(
    "fortemi_job_run_duration_seconds",
    "How long a job's handler ran, by tier, type and the status it left",
    ["tier", "type", "status"],
    buckets=_BUCKETS,
)
AUDIT_WRITE_SECONDS = Histogram(
    "fortemi_audit_write_seconds",
    "Time to commit one batch of audit rows",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
POLICY_RELOADS = Counter(
    "fortemi_policy_reloads_total",
    "Policy set reloads by trigger and outcome",
    ["trigger", "outcome"],
)
RETRIEVAL_PLAN_SECONDS = Histogram(
    "fortemi_retrieval_plan_seconds",
    "Retrieval plans computed, by scope (project or memory) and outcome (answered, "
    "the reason it abstained, or error)",
    ["scope", "outcome"],
    buckets=_BUCKETS,
)
GENERATION_CALLS = Counter(
    "fortemi_generation_calls_total",
    "Model calls made for answers, by tier, model and outcome (stop, length, empty, error)",
    ["tier", "model", "outcome"],
)
GENERATION_SECONDS = Histogram(
    "fortemi_generation_call_duration_seconds",
    "How long an answer's model call took, by tier, model and outcome",
    ["tier", "model", "outcome"],
    buckets=_BUCKETS,
)
GENERATION_TOKENS = Counter(
    "fortemi_generation_tokens_total",
    "Tokens of answers' model calls by tier, model and kind: prompt (as the plan counted "
    "them), evaluated (the server's prompt_eval_count) and answer",
    ["tier", "model", "kind"],
)

_OPERATION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# Distinct operation names one process labels before the rest count as "other": a client
# that sends a fresh name per request must not grow the registry without bound.
MAX_OPERATION_NAMES = 500
_names: set[str] = set()
_names_lock = threading.Lock()


def operation_label(name: object) -> str:
    """The label for an operation name: itself while bounded and well formed, else
    ``anonymous`` (no name) or ``other`` (a client may send anything, even a JSON object)."""
    if name is None or name == "":
        return "anonymous"
    if not isinstance(name, str) or not _OPERATION_NAME.fullmatch(name):
        return "other"
    with _names_lock:
        if name in _names:
            return name
        if len(_names) >= MAX_OPERATION_NAMES:
            return "other"
        _names.add(name)
        return name


def exposition() -> bytes:
    """Every metric of this process, in the Prometheus text format."""
    return generate_latest()
