"""Authorization cost: decide() latency and read-scope cost over 1,000 project policies.

``python -m benchmarks.authz [--projects 1000] [--skills 50] [--decisions 100000] [--home DIR]``

A policy folder is generated in the home directory: the shipped ``default.yaml``, a
policy letting every viewer into the memory the decisions are made in, N project policies
(``projects/p0000/_access.yaml`` ...) and M shared skills, with a mix of access levels,
owner and allowed groups out of 50 teams, per-action role overrides, some deny lists and
some grants. It is loaded through the production provider (``build_policy_service``:
files + database + Redis generation check) so the load figure includes parsing,
validation and hashing of every file.

Then, in this process (the engine does no I/O):

* ``decide()``: after a warm-up, ``--decisions`` decisions on random (principal, action,
  resource) triples. Principals have 0-3 of the 50 teams, one or two roles and sometimes
  a permission; resources are projects (5% without a policy), skills, the memory, system
  and audit. Each call is timed alone with ``perf_counter_ns``; the timer's own cost
  (measured, shown) is included. The goal is p99 < 50 us.
* ``read_scope()``: cold (the engine evaluates every project and skill policy for the
  principal) against cached (the LRU answers), for distinct principals.
* ``snapshot()``: the cost of asking the production provider for the set in force on a
  request (no Redis round trip is due), which every decision is preceded by.

Percentiles are nearest-rank, in microseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import redis.asyncio as redis

from benchmarks._audit import audit_write_cost
from benchmarks._common import (
    Latency,
    backing_services,
    bench_home,
    common_setup,
    print_setup,
    table,
)
from fortemi.auth.decision import Action, Resource, ResourceType
from fortemi.auth.policy import AccessDecisionEngine, PolicySet, build_policy_service
from fortemi.auth.principal import Principal
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.migrations import Migrations

__all__ = ["main"]

GOAL_P99_US = 50.0
MEMORY = "bench"
TEAMS = [f"team-{i:02d}" for i in range(50)]
ROLES = ["viewer", "editor", "admin", "auditor"]
PERMISSIONS = ["skill:read", "audit:read", "x:export"]
SHIPPED = Path(__file__).resolve().parents[1] / "policies"


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}"


# -- the workload -----------------------------------------------------------------------------


def _write_policies(directory: Path, projects: int, skills: int, rng: random.Random) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    shutil.copy(SHIPPED / "default.yaml", directory / "default.yaml")
    # The memory lets every viewer in, so each project and skill decision reaches its own
    # policy instead of stopping at the memory's admission.
    (directory / "memories").mkdir()
    (directory / "memories" / f"{MEMORY}.yaml").write_text(
        f"version: 1\nmemory: {MEMORY}\naccess_level: public\nrequired_role: viewer\n"
        "actions:\n  write: {required_role: editor}\n  delete: {required_role: editor}\n"
        "  admin: {required_role: admin}\n"
    )
    for kind, count in (("project", projects), ("skill", skills)):
        for i in range(count):
            name = f"p{i:04d}" if kind == "project" else f"SKILL-s{i:03d}"
            folder = directory / ("projects" if kind == "project" else "shared/skills") / name
            folder.mkdir(parents=True)
            (folder / "_access.yaml").write_text(_policy_text(kind, name, rng))


def _policy_text(kind: str, name: str, rng: random.Random) -> str:
    level = rng.choices(["group", "private", "public"], weights=[6, 2, 2])[0]
    lines = [
        "version: 1",
        f"{kind}: {name}",
        f"owner_group: {rng.choice(TEAMS)}",
        f"access_level: {level}",
        f"allowed_groups: [{', '.join(rng.sample(TEAMS, k=rng.randint(1, 3)))}]",
        "required_role: viewer",
        "actions:",
        "  write: {required_role: editor}",
        "  delete: {required_role: editor}",
        "  admin: {required_role: admin}",
    ]
    if rng.random() < 0.1:
        lines.append(f"deny: {{groups: [{rng.choice(TEAMS)}], subjects: [mallory]}}")
    if rng.random() < 0.1:
        lines.append("grant: {roles: [auditor], permissions: [x:export]}")
    return "\n".join(lines) + "\n"


def _principals(count: int, rng: random.Random) -> list[Principal]:
    expires = datetime.now(UTC) + timedelta(hours=1)
    return [
        Principal(
            sub=f"user-{i}",
            groups=frozenset(rng.sample(TEAMS, k=rng.randint(0, 3))),
            roles=frozenset(rng.sample(ROLES, k=rng.randint(1, 2))),
            permissions=frozenset(rng.sample(PERMISSIONS, k=rng.choice([0, 0, 1]))),
            issuer="https://bench.invalid",
            client_id="bench",
            token_id=None,
            expires_at=expires,
        )
        for i in range(count)
    ]


def _resources(projects: int, skills: int, rng: random.Random) -> list[Resource]:
    out: list[Resource] = []
    for _ in range(10_000):
        pick = rng.random()
        if pick < 0.80:
            i = rng.randrange(int(projects * 1.05))  # ~5% name a project without a policy
            out.append(Resource(ResourceType.PROJECT, f"p{i:04d}", MEMORY))
        elif pick < 0.95:
            out.append(Resource(ResourceType.SKILL, f"SKILL-s{rng.randrange(skills):03d}", MEMORY))
        else:
            out.append(
                rng.choice([Resource.of_memory(MEMORY), Resource.system(), Resource.audit()])
            )
    return out


# -- measuring --------------------------------------------------------------------------------


def _timed(calls: int, call: Callable[[int], object]) -> list[float]:
    """Each call timed alone, in seconds."""
    clock = time.perf_counter_ns
    samples = [0.0] * calls
    for i in range(calls):
        started = clock()
        call(i)
        samples[i] = (clock() - started) / 1e9
    return samples


def _row(label: str, samples: Sequence[float]) -> list[str]:
    figures = Latency.of(samples)
    return [
        label,
        str(figures.count),
        us(figures.p50),
        us(figures.p95),
        us(figures.p99),
        us(figures.mean),
    ]


async def _run(args: argparse.Namespace, home: Path, urls: ServiceUrls, embedded: bool) -> None:
    rng = random.Random(args.seed)
    directory = home / "bench-policies"
    _write_policies(directory, args.projects, args.skills, rng)

    db = await Database.connect(urls.database, min_size=1, max_size=2)
    client = redis.Redis.from_url(urls.redis)
    try:
        await Migrations().migrate_shared(db)
        provider = build_policy_service(directory, db, client)
        started = time.perf_counter()
        policies = await provider.snapshot()
        load_seconds = time.perf_counter() - started
        if policies.errors:
            raise RuntimeError(f"generated policies do not load: {policies.errors[:3]}")
        snapshot_samples = [0.0] * 10_000
        for i in range(len(snapshot_samples)):
            t0 = time.perf_counter_ns()
            await provider.snapshot()
            snapshot_samples[i] = (time.perf_counter_ns() - t0) / 1e9

        setup = await common_setup(urls, embedded, home)
        setup += [
            ("policies", f"{args.projects} projects + {args.skills} skills + default.yaml "
                         f"(version {policies.version[:12]})"),
            ("workload", f"{args.decisions} decisions, seed {args.seed}, 50 teams, "
                         f"{len(ROLES)} roles; goal decide() p99 < {GOAL_P99_US:g} us"),
        ]  # fmt: skip
        print_setup("authz: decision engine and read scopes", setup)
        _measure(args, policies, rng, load_seconds, snapshot_samples)

        # -- audit write cost ------------------------------------------------------------------
        await _audit_cost(urls, args.audit_requests)
    finally:
        await client.aclose()
        await db.close()


async def _audit_cost(urls: ServiceUrls, requests: int) -> None:
    """Recording a request's decisions (two, as a note write asks) through the real
    AuditWriter, next to one unchained single-row INSERT per request (the baseline)."""
    db = await Database.connect(urls.database, min_size=1, max_size=10)
    try:
        rows = []
        for concurrency in (1, 16):
            cost = await audit_write_cost(
                db, requests=requests, decisions_per_request=2, concurrency=concurrency
            )
            for path in ("audit", "plain"):
                rows.append(
                    [
                        str(concurrency),
                        "AuditWriter (chained)" if path == "audit" else "plain INSERT",
                        f"{cost[f'{path}_p50_us']:.0f}",
                        f"{cost[f'{path}_p99_us']:.0f}",
                        f"{cost[f'{path}_mean_us']:.0f}",
                        f"{cost[f'{path}_rows_per_s']:,.0f}",
                    ]
                )
    finally:
        await db.close()
    print()
    print(f"audit write per request: 2 decisions, {requests} requests per row, pool of 10")
    headers = ["conc.", "path", "p50 us", "p99 us", "mean us", "rows/s"]
    print(table(headers, rows, "rlrrrr"), flush=True)


def _measure(
    args: argparse.Namespace,
    policies: PolicySet,
    rng: random.Random,
    load_seconds: float,
    snapshot_samples: list[float],
) -> None:
    engine = AccessDecisionEngine()
    principals = _principals(1_000, rng)
    resources = _resources(args.projects, args.skills, rng)
    actions = [rng.choice(list(Action)) for _ in range(10_000)]
    triples = [
        (rng.choice(principals), actions[i % len(actions)], resources[(i * 7) % len(resources)])
        for i in range(args.decisions)
    ]
    decide = engine.decide
    for who, action, resource in triples[: min(10_000, len(triples))]:  # warm-up
        decide(policies, who, action, resource)
    timer = _timed(100_000, lambda _: None)

    def one_decision(i: int) -> None:
        who, action, resource = triples[i]
        decide(policies, who, action, resource)

    decisions = _timed(args.decisions, one_decision)
    allowed = sum(decide(policies, *t).allowed for t in triples[:10_000])

    scoped = principals[:200]
    cold = _timed(len(scoped), lambda i: engine.compute_read_scope(policies, scoped[i], MEMORY))
    for who in scoped:
        engine.read_scope(policies, who, MEMORY)  # fill the cache
    cached = _timed(
        len(scoped) * 50, lambda i: engine.read_scope(policies, scoped[i % 200], MEMORY)
    )

    headers = ["operation", "n", "p50 us", "p95 us", "p99 us", "mean us"]
    rows = [
        _row("decide()", decisions),
        _row("  (timer alone)", timer),
        _row("read_scope(), cold", cold),
        _row("read_scope(), cached", cached),
        _row("provider.snapshot()", snapshot_samples),
    ]
    print(table(headers, rows, "lrrrrr"))
    print()
    p99 = Latency.of(decisions).p99 * 1e6
    mean = Latency.of(decisions).mean
    verdict = "met" if p99 < GOAL_P99_US else "NOT met"
    sampled = min(10_000, len(triples))
    facts = [
        ["initial load (files parsed, validated, hashed)", f"{load_seconds * 1000:.1f} ms"],
        ["decisions per second, one core", f"{1 / mean:,.0f}"],
        [f"allowed among the first {sampled:,} decisions", f"{allowed / sampled:.1%}"],
        [f"goal: decide() p99 < {GOAL_P99_US:g} us", f"{p99:.2f} us: {verdict}"],
    ]
    print(table(["figure", "value"], facts, "lr"), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.authz", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--projects", type=int, default=1000, help="project policies (default 1000)"
    )
    parser.add_argument("--skills", type=int, default=50, help="skill policies (default 50)")
    parser.add_argument("--decisions", type=int, default=100_000, help="timed decisions")
    parser.add_argument("--seed", type=int, default=1, help="RNG seed for policies and asks")
    parser.add_argument("--home", help="FORTEMI_HOME to use (default: a fresh temporary one)")
    parser.add_argument(
        "--audit-requests", type=int, default=2000, help="requests per audit-cost row"
    )
    args = parser.parse_args(argv)
    if min(args.projects, args.skills, args.decisions) < 1:
        parser.error("--projects, --skills and --decisions must be positive")
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        asyncio.run(_run(args, home, urls, embedded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
