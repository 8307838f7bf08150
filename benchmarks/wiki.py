"""Wiki-scoped retrieval plans (``retrieve``) beside plain ``search`` on a labelled vault.

``python -m benchmarks.wiki [--vault DIR --questions FILE] [--copies N | --projects N]
[--repeat R] [--ask] [--home DIR] [--keep MEMORY]``

A vault (default: the homelab test vault, tests/data/vaults/homelab, with its labelled
questions; ``--vault ../shared/corpora/foam-docs --questions
benchmarks/data/foam-docs-questions.yaml`` for a real one) goes into one fresh memory
through GraphQL ``upsertExternalNotes`` as a vault sync stores it (source ``vault:<name>``,
``metadata.path``, project or skill from the path; links resolved as notes are written).
Two ways to make it larger:

* ``--copies N`` adds N - 1 copies of its projects and shared concepts under other
  project names (``poimen-2``, ...): the homelab vault, 8 distinct notes repeated;
* ``--projects N`` loads a vault without projects (foam-docs) as N projects,
  ``projects/<name>-<i>/<path>``, whose links resolve inside each copy; its questions
  are asked in ``<name>-1`` (12 copies of foam-docs: 1,032 notes of real documentation,
  each project 86 notes, the scope a question is routed in). Plain search is then
  filtered to that project too: memory-wide it could not tell the copies apart.

Every note is chunked and embedded in this process by the ``Embedding`` job's own handler
with the local model, before anything is measured. ``--keep NAME`` loads the vault into
memory NAME and keeps it, or, when NAME exists already (same ``--home``), measures it
again without loading.

Then every labelled question goes, ``--repeat`` times, through GraphQL in process (the
whole app over an ASGI transport: authentication, authorization and audit included, no
socket):

* ``retrieve`` (token budget 4096): note recall@5 (the expected note among the notes of
  the five best selected chunks by score), section hit@5 (one of those chunks under the
  expected section), abstention on the unanswerable questions, tokens of the prompt, and
  the pre-filter cut twice: against the chunks a semantic search over the question's
  scope would score (``searchSpaceCut``), and against every chunk of the vault (a
  full-vault semantic search);
* plain ``search`` (HYBRID, RSF, limit 5): the same recall and section hit (a hit's chunk
  is placed in the note by its text); it never abstains; its tokens are those of the
  five chunks;
* with ``--ask``, ``ask``, answered by the Ollama-API double's *extractive reader*
  (tests/support/ollama_double.py) over its real socket: llmCalls per question, and
  token efficiency, the tokens of the chunks its answer cites over the tokens of all the
  chunks in its context (each chunk's block as the plan counts it), averaged over the
  questions answered.

They are measured beside the same plan computed in process (the planner called
directly), TF-IDF routing alone as the plan routes (:meth:`ScopedRetrieval.route` within
the question's project scope: the link graph's reachable set, every skill admitted, 40
notes kept; its memory transaction included) and its one statement alone (in a
transaction already open), both four times per question asked, alternating which goes
first, after a warm-up pass (steady state: the statement prepared and planned on the
pooled connections, as on a server that has been answering for a while). Latency
percentiles are nearest-rank, over every question and
repetition; the setup prints the machine's load average.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import httpx

from benchmarks._common import (
    Latency,
    backing_services,
    bench_home,
    common_setup,
    ms,
    print_setup,
    table,
)
from benchmarks._server import bench_settings
from fortemi.app import create_app
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.inference import OllamaBackend
from fortemi.platform.ids import parse_note_id
from fortemi.platform.jobs.models import HandlerContext, Job, JobStatus, Tier
from fortemi.platform.notes.models import NameSet, NoteVisibility
from fortemi.retrieval.indexing import EMBEDDING, Chunking, embedding_job_type
from fortemi.retrieval.scoped import NoteScope, ScopedRetrieval, with_all_skills
from fortemi.retrieval.scoped_repository import ScopedRepository
from fortemi.runtime import Runtime
from fortemi.wiki.answers.service import AnswerService
from fortemi.wiki.retrieve.layout import ApproximateTokens
from fortemi.wiki.retrieve.models import RetrieveRequest
from fortemi.wiki.retrieve.scope import LinkedReach
from tests.support.homelab import HOMELAB, QUESTIONS, Question, questions, vault_items
from tests.support.ollama_double import OllamaDouble

__all__ = ["main"]

OPEN = {
    "version": 1,
    "access_level": "public",
    "required_role": "viewer",
    "actions": {"write": {"required_role": "editor"}},
}
RETRIEVE = """query($input: RetrieveInput!) { retrieve(input: $input) {
  chunks { note { path } heading score tokens } abstained reason tokensUsed tookMs
  chunksScored chunksInScope searchSpaceCut } }"""
SEARCH = """query($q: String!, $filter: SearchFilter) {
  search(query: $q, mode: HYBRID, fusion: RSF, limit: 5, filter: $filter) {
    hits { note { metadata } chunk } tookMs } }"""
ASK = """query($input: AskInput!) { ask(input: $input) {
  answer citations { number } llmCalls tookMs plan { chunks { tokens } } } }"""
# Routing as the plan routes: twice the documents it keeps (FORTEMI_WIKI_DOCUMENTS, 20),
# so that notes of skills the caller may not read can be dropped and still leave 20.
DOCUMENTS = 40
READER = "extractive-reader"
ROUTINGS = 4  # routing and its statement are timed this many times per question asked
UPSERT = """mutation($i: UpsertExternalNotesInput!) {
  upsertExternalNotes(input: $i) { results { note { id } } } }"""


@dataclass
class Row:
    label: str
    recall: list[bool] = field(default_factory=list)
    section: list[bool] = field(default_factory=list)
    abstained: list[bool] = field(default_factory=list)  # on unanswerable questions
    tokens: list[int] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    took: list[float] = field(default_factory=list)
    cut: list[float] = field(default_factory=list)


def _copies(root: Path, name: str, count: int) -> list[dict[str, Any]]:
    """The vault's items, and ``count - 1`` copies of its projects and shared notes."""
    items = vault_items(root, name)
    for n in range(2, count + 1):
        for item in vault_items(root, name):
            path: str = item["externalId"]
            if item["skill"] is not None:
                continue
            if item["project"] is not None:
                project = f"{item['project']}-{n}"
                path = path.replace(f"projects/{item['project']}/", f"projects/{project}/", 1)
                item["project"] = project
            else:
                path = path.replace("shared/", f"shared/copy-{n}/", 1)
            item["externalId"] = path
            item["metadata"] = {**item["metadata"], "path": path}
            items.append(item)
    return items


def _as_projects(root: Path, name: str, count: int) -> list[dict[str, Any]]:
    """``count`` copies of a vault without projects, copy i as project ``<name>-<i>``
    (``projects/<name>-<i>/<path>``): its links resolve inside the copy, as a project's
    own relative and bare-name links do."""
    items: list[dict[str, Any]] = []
    for n in range(1, count + 1):
        for item in vault_items(root, name):
            if item["project"] is not None or item["skill"] is not None:
                raise SystemExit("--projects takes a vault without projects/ or skills")
            project = f"{name}-{n}"
            path = f"projects/{project}/{item['externalId']}"
            item["project"] = project
            item["externalId"] = path
            item["metadata"] = {**item["metadata"], "path": path}
            items.append(item)
    return items


def _in_first_project(asked: list[Question], name: str) -> list[Question]:
    """The questions of a vault loaded with ``--projects``, asked in its first copy."""
    project = f"{name}-1"
    return [
        Question(
            q.question,
            project,
            None if q.note is None else f"projects/{project}/{q.note}",
            q.section,
        )
        for q in asked
    ]


def _sections(items: Sequence[dict[str, Any]]) -> dict[str, list[tuple[int, str]]]:
    """Per vault path: (offset in the synced content, heading) of each markdown heading
    outside code fences, to place a search hit's chunk in its section."""
    found = {}
    for item in items:
        offsets, at, fenced = [], 0, False
        for line in item["content"].splitlines(keepends=True):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced and line.startswith("#") and line.lstrip("#").startswith(" "):
                offsets.append((at, line.lstrip("#").strip()))
            at += len(line)
        found[item["externalId"]] = offsets
    return found


def _section_of(sections: list[tuple[int, str]], content: str, chunk: str) -> str | None:
    start = content.find(chunk.strip()[:200])
    if start < 0:
        return None
    # A chunk that begins at a heading belongs to it.
    before = [heading for offset, heading in sections if offset <= start + 2]
    return before[-1] if before else None


async def _embed(runtime: Runtime, memory: str, notes: Sequence[UUID]) -> None:
    settings = runtime.settings
    job_type = embedding_job_type(
        runtime.db,
        runtime.backend,
        Chunking(size=settings.chunk_size, overlap=settings.chunk_overlap),
        tier=Tier.CPU,
    )
    now = datetime.now(UTC)

    async def nothing(*_: Any, **__: Any) -> Any:
        return None

    for note_id in notes:
        job = Job(
            id=uuid4(), memory=memory, type=EMBEDDING, tier=Tier.CPU, priority=4,
            status=JobStatus.RUNNING, payload={"note_id": str(note_id)}, attempts=1,
            max_attempts=8, next_attempt_at=now, progress=0, progress_message=None,
            failure_class=None, failure_code=None, result=None, dedupe_key=None,
            requested_by=None, created_at=now, started_at=now, finished_at=None,
        )  # fmt: skip
        context = HandlerContext(
            job=job, report_progress=nothing, enqueue=nothing, escalate=nothing, publish=nothing
        )
        await job_type.handler(context)


async def _load(
    runtime: Runtime,
    client: httpx.AsyncClient,
    memory: str,
    items: list[dict[str, Any]],
    name: str,
    token: str,
) -> int:
    await runtime.memories.create(memory, created_by="bench")
    store = runtime.policies
    await store.put("memory", memory, memory, {**OPEN, "memory": memory}, actor="bench")
    await store.put("skill", None, "SKILL-testing", {**OPEN, "skill": "SKILL-testing"}, actor="b")
    for project in sorted({i["project"] for i in items if i["project"]} - {"poimen"}):
        await store.put("project", memory, project, {**OPEN, "project": project}, actor="bench")
    ids: list[UUID] = []
    for start in range(0, len(items), 200):
        body = await _post(
            client, token, memory, UPSERT,
            {"i": {"source": f"vault:{name}", "items": items[start : start + 200]}},
        )  # fmt: skip
        ids += [parse_note_id(r["note"]["id"]) for r in body["upsertExternalNotes"]["results"]]
    await _embed(runtime, memory, ids)
    return len(ids)


async def _post(
    client: httpx.AsyncClient, token: str, memory: str, query: str, variables: dict[str, Any]
) -> dict[str, Any]:
    response = await client.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}", "X-Fortemi-Memory": memory},
    )
    body = response.json()
    if body.get("errors"):
        raise RuntimeError(str(body["errors"]))
    data: dict[str, Any] = body["data"]
    return data


@dataclass
class Legs:
    """Every leg measured, in the order reported."""

    plan: Row = field(default_factory=lambda: Row("retrieve (GraphQL)"))
    search: Row = field(default_factory=lambda: Row("search HYBRID RSF (GraphQL)"))
    inproc: Row = field(default_factory=lambda: Row("retrieve (in process)"))
    routing: Row = field(default_factory=lambda: Row("TF-IDF routing (ScopedRetrieval.route)"))
    statement: Row = field(default_factory=lambda: Row("TF-IDF routing statement alone"))
    ask: Row = field(default_factory=lambda: Row("ask (GraphQL, extractive double)"))
    full_cut: list[float] = field(default_factory=list)  # against the whole vault's chunks
    calls: list[int] = field(default_factory=list)  # llmCalls per question asked
    cited: list[float] = field(default_factory=list)  # cited tokens / context tokens

    def rows(self) -> list[Row]:
        rows = [self.plan, self.search, self.inproc, self.routing, self.statement]
        return rows + ([self.ask] if self.ask.latency else [])


@dataclass(frozen=True)
class Setting:
    """What every question is measured against."""

    runtime: Runtime
    client: httpx.AsyncClient
    memory: str
    token: str
    items: list[dict[str, Any]]
    vault_chunks: int  # the chunks a semantic search over the whole vault would score
    asker: httpx.AsyncClient | None  # the app answering ``ask`` from the double, if any
    filtered: bool  # search filtered to the question's project (copies of one vault)


def _score_plan(legs: Legs, q: Question, result: dict[str, Any], vault_chunks: int) -> None:
    plan = legs.plan
    top = sorted(result["chunks"], key=lambda c: -c["score"])[:5]
    if q.note is None:
        plan.abstained.append(result["abstained"])
    else:
        plan.recall.append(q.note in {c["note"]["path"] for c in top})
        plan.section.append(
            any(
                c["note"]["path"] == q.note and (c["heading"] or "").split(" > ")[-1] == q.section
                for c in top
            )
        )
    plan.tokens.append(result["tokensUsed"])
    if result["chunksInScope"]:
        plan.cut.append(result["searchSpaceCut"])
    legs.full_cut.append(1 - result["chunksScored"] / vault_chunks)


def _score_ask(legs: Legs, result: dict[str, Any], started: float) -> None:
    """Token efficiency: the tokens of the chunks the answer cites over the tokens of
    every chunk in its context (each chunk's block as the plan counts it)."""
    legs.ask.latency.append(time.perf_counter() - started)
    legs.ask.took.append(result["tookMs"])
    legs.calls.append(result["llmCalls"])
    chunks = result["plan"]["chunks"]
    if result["answer"] is not None and chunks:
        context = sum(c["tokens"] for c in chunks)
        cited = {c["number"] for c in result["citations"]}
        used = sum(c["tokens"] for n, c in enumerate(chunks, start=1) if n in cited)
        legs.cited.append(used / context)


async def _measure(setting: Setting, asked: list[Question], repeat: int) -> Legs:
    runtime, client, memory, token = setting.runtime, setting.client, setting.memory, setting.token
    contents = {item["externalId"]: item["content"] for item in setting.items}
    sections = _sections(setting.items)
    counter = ApproximateTokens()
    legs = Legs()
    if setting.filtered:
        legs.search.label = "search HYBRID RSF (GraphQL, in the project)"
    scoped = ScopedRetrieval(runtime.db, runtime.backend)
    # The benchmark's user reads everything in the memory: the in-process plan is asked
    # with that visibility, as the GraphQL layer would compute it.
    everything = NameSet(frozenset(), only=False)
    scope = NoteVisibility(memory_notes=True, projects=everything, skills=everything)

    # Routing as the plan routes: within the project's scope as the served plan finds it
    # (the link graph's reachable set, found beforehand; else the memory), every skill
    # admitted, twice the documents kept.
    seam = LinkedReach(runtime.services.links, scoped)
    reaches: dict[str, frozenset[UUID]] = {}

    async def reach(project: str | None) -> frozenset[UUID] | None:
        if project is not None and project not in reaches:
            reaches[project] = frozenset(await seam.reachable(memory, None, project))
        return None if project is None else reaches[project]

    # Steady state first: every pooled connection the routing statement may run on has
    # it prepared and planned (PostgreSQL plans a prepared statement's first five runs on
    # each connection anew), as on a server that has been answering for a while.
    for q in asked:
        for _ in range(2):
            await _routing(
                runtime,
                memory,
                q.question,
                NoteScope(with_all_skills(scope), None, await reach(q.project)),
                None,
                statement_first=False,
            )

    async def allow(names: Any) -> set[str]:
        return set(names)

    for _ in range(repeat):
        for q in asked:
            started = time.perf_counter()
            asking = {"input": {"question": q.question, "project": q.project}}
            data = await _post(client, token, memory, RETRIEVE, asking)
            legs.plan.latency.append(time.perf_counter() - started)
            legs.plan.took.append(data["retrieve"]["tookMs"])
            _score_plan(legs, q, data["retrieve"], setting.vault_chunks)

            search = legs.search
            started = time.perf_counter()
            filtering = {"filter": {"projects": [q.project]}} if setting.filtered else {}
            data = await _post(client, token, memory, SEARCH, {"q": q.question, **filtering})
            search.latency.append(time.perf_counter() - started)
            found = data["search"]
            search.took.append(found["tookMs"])
            hits = [(h["note"]["metadata"].get("path"), h["chunk"] or "") for h in found["hits"]]
            if q.note is None:
                search.abstained.append(not hits)
            else:
                search.recall.append(q.note in {path for path, _ in hits})
                search.section.append(
                    any(
                        path == q.note
                        and _section_of(sections[path], contents[path], chunk) == q.section
                        for path, chunk in hits
                    )
                )
            search.tokens.append(sum(counter.count(chunk) for _, chunk in hits))

            started = time.perf_counter()
            await runtime.services.retrieve.plan(
                memory, scope, RetrieveRequest(question=q.question, project=q.project), allow
            )
            legs.inproc.latency.append(time.perf_counter() - started)

            routed = NoteScope(with_all_skills(scope), None, await reach(q.project))
            for turn in range(ROUTINGS):
                await _routing(
                    runtime, memory, q.question, routed, legs, statement_first=turn % 2 == 1
                )

            if setting.asker is not None:
                started = time.perf_counter()
                data = await _post(setting.asker, token, memory, ASK, asking)
                _score_ask(legs, data["ask"], started)
    return legs


async def _routing(
    runtime: Runtime,
    memory: str,
    question: str,
    routed: NoteScope,
    legs: Legs | None,
    *,
    statement_first: bool,
) -> None:
    """TF-IDF routing (its memory transaction included), and its statement alone in a
    transaction already open, one after the other in the order given (alternated, so
    that neither always finds the other's caches warm)."""
    scoped = ScopedRetrieval(runtime.db, runtime.backend)

    async def route() -> None:
        started = time.perf_counter()
        await scoped.route(memory, question, routed, documents=DOCUMENTS)
        if legs is not None:
            legs.routing.latency.append(time.perf_counter() - started)

    async def statement() -> None:
        async with runtime.db.memory_transaction(memory) as conn:
            started = time.perf_counter()
            await ScopedRepository().route(conn, question, routed.where(question), DOCUMENTS)
            if legs is not None:
                legs.statement.latency.append(time.perf_counter() - started)

    for step in (statement, route) if statement_first else (route, statement):
        await step()


def _share(values: Sequence[bool]) -> str:
    return (
        f"{100 * sum(values) / len(values):.0f} % ({sum(values)}/{len(values)})" if values else "-"
    )


def _mean(values: Sequence[float], scale: float = 1, unit: str = "") -> str:
    return f"{scale * sum(values) / len(values):.{1 if unit else 2}f}{unit}" if values else "-"


def _report(legs: Legs) -> None:
    quality = [
        [
            row.label,
            _share(row.recall),
            _share(row.section),
            _share(row.abstained),
            f"{sum(row.tokens) / len(row.tokens):.0f}",
            _mean(row.cut, 100, " %"),
            _mean(legs.full_cut, 100, " %") if row is legs.plan else "-",
        ]
        for row in (legs.plan, legs.search)
    ]
    print(table(
        ["run", "note recall@5", "section hit@5", "unanswerable abstained", "tokens (mean)",
         "cut vs scope", "cut vs vault"],
        quality, "lrrrrrr",
    ))  # fmt: skip
    print()
    if legs.calls:
        print(table(
            ["run", "questions", "llmCalls (mean)", "answered", "cited / context tokens (mean)"],
            [[legs.ask.label, str(len(legs.calls)), _mean([float(c) for c in legs.calls]),
              str(len(legs.cited)), _mean(legs.cited, 100, " %")]],
            "lrrrr",
        ))  # fmt: skip
        print()
    timing = []
    for row in legs.rows():
        lat = Latency.of(row.latency)
        took = Latency.of(row.took) if row.took else None
        timing.append(
            [row.label, str(lat.count), ms(lat.p50), ms(lat.p95),
             "-" if took is None else f"{took.p50:.2f}", "-" if took is None else f"{took.p95:.2f}"]
        )  # fmt: skip
    print(table(["run", "n", "p50 ms", "p95 ms", "tookMs p50", "tookMs p95"], timing, "lrrrrr"))


async def _vault_chunks(runtime: Runtime, memory: str) -> int:
    everything = NameSet(frozenset(), only=False)
    scope = NoteScope(NoteVisibility(memory_notes=True, projects=everything, skills=everything))
    async with runtime.db.memory_transaction(memory) as conn:
        return await ScopedRepository().chunks_in_scope(conn, scope.where())


@contextlib.asynccontextmanager
async def _asker(runtime: Runtime, enabled: bool) -> AsyncIterator[httpx.AsyncClient | None]:
    """The app with its answers generated by the Ollama-API double's extractive reader,
    over the double's real socket; None when not asked for."""
    if not enabled:
        yield None
        return
    with OllamaDouble() as double:
        double.generators.add(READER)
        double.extractive.add(READER)
        backend = OllamaBackend(double.url, fast_model=READER, standard_model=READER)
        answers = AnswerService(runtime.services.retrieve, backend)
        variant = dataclasses.replace(
            runtime, services=dataclasses.replace(runtime.services, answers=answers)
        )
        transport = httpx.ASGITransport(app=create_app(variant))
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
                yield client
        finally:
            await backend.aclose()


async def _run(args: argparse.Namespace, root: Path) -> None:
    name = args.name or root.name
    if args.projects:
        items = _as_projects(root, name, args.projects)
        asked = _in_first_project(questions(Path(args.questions)), name)
        shape = f"{args.projects} copies as projects {name}-1..{args.projects}"
    else:
        items = _copies(root, name, args.copies)
        asked = questions(Path(args.questions))
        shape = f"x {args.copies}"
    with bench_home(args.home) as home, backing_services(home) as (urls, embedded):
        settings = bench_settings(home, 8000)  # nothing is served: the port is never bound
        runtime = await Runtime.open(settings, urls)
        try:
            issuer: LocalIssuer | None = runtime.issuer
            assert issuer is not None
            token = issuer.mint(
                "bench", groups=["platform-team", "devops-team", "ml-team"], roles=["editor"],
                permissions=["skill:read", "skill:write"],
            )  # fmt: skip
            transport = httpx.ASGITransport(app=create_app(runtime))
            async with (
                httpx.AsyncClient(transport=transport, base_url="http://bench") as client,
                _asker(runtime, args.ask) as asker,
            ):
                memory = args.keep or f"wiki_{uuid4().hex[:8]}"
                started = time.perf_counter()
                if await runtime.memories.exists(memory):
                    notes = (await runtime.services.search.index_status(memory)).notes
                else:
                    notes = await _load(runtime, client, memory, items, name, token)
                loaded = time.perf_counter() - started
                vault_chunks = await _vault_chunks(runtime, memory)
                lines = await common_setup(urls, embedded, home)
                lines += [
                    ("vault", f"{root} {shape}: {notes} notes, {vault_chunks} chunks, loaded "
                              f"and embedded in {loaded:.1f} s (local model, in process)"),
                    ("questions", f"{len(asked)} ({sum(q.note is None for q in asked)} "
                                  f"unanswerable) x {args.repeat}"),
                    ("client", "httpx over ASGI in process (no socket), one request at a time"),
                    ("load", os.getloadavg().__repr__()),
                ]  # fmt: skip
                if args.ask:
                    lines.append(("ask", "generation by the Ollama-API double's extractive "
                                         "reader, over its socket"))  # fmt: skip
                print_setup("wiki retrieval plans vs search", lines)
                setting = Setting(
                    runtime, client, memory, token, items, vault_chunks, asker, args.projects > 0
                )
                _report(await _measure(setting, asked, args.repeat))
                if args.keep is None:
                    await runtime.memories.delete(memory, confirm=memory)
                    await runtime.policies.delete("skill", None, "SKILL-testing")
        finally:
            await runtime.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.wiki", description=__doc__)
    parser.add_argument("--vault", default=str(HOMELAB / "vault"), help="the vault's folder")
    parser.add_argument("--name", default=None, help="the vault's name (default: folder)")
    parser.add_argument("--questions", default=str(QUESTIONS), help="labelled questions")
    parser.add_argument("--copies", type=int, default=1, help="copies of the vault's projects")
    parser.add_argument(
        "--projects", type=int, default=0,
        help="copies of a vault without projects, each as project <name>-<i>",
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3, help="times each question is asked")
    parser.add_argument("--ask", action="store_true", help="also ask, answered by the double")
    parser.add_argument("--home", default=None, help="FORTEMI_HOME to use and keep")
    parser.add_argument("--keep", default=None, help="memory to load and keep, or to reuse")
    args = parser.parse_args(argv)
    asyncio.run(_run(args, Path(args.vault).resolve()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
