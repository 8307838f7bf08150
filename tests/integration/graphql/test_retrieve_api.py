"""retrieve through GraphQL over the homelab vault: access before search, scope by
project, skills dropped and audited, abstention, the token budget, and a prompt prefix
that is the same for the same question."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator, Iterable
from typing import Any
from uuid import UUID

import blake3
import httpx
import pytest
from starlette.applications import Starlette

from fortemi.app import create_app
from fortemi.auth.local_issuer import LocalIssuer
from fortemi.platform.notes.models import NameSet, NoteVisibility
from fortemi.retrieval.service import ScopedRetrieval
from fortemi.runtime import Runtime
from fortemi.wiki.retrieve.models import PlanSettings, RetrievalPlan, RetrieveRequest
from fortemi.wiki.retrieve.router import SkillGate
from fortemi.wiki.retrieve.scope import LinkedReach
from fortemi.wiki.retrieve.service import RetrievalPlanner
from tests.integration.graphql.conftest import error_codes
from tests.support.homelab import questions

RETRIEVE = """query($input: RetrieveInput!) {
  retrieve(input: $input) {
    chunks { note { id title path project skill } heading text position score relevance tokens }
    abstained reason tokensUsed tokenBudget tookMs prefixHash prompt candidateCount
    candidates { note { path } heading tfidfScore metadataScore semanticScore fusedScore
                 selected dropped }
    strategy scope fellBack scopeNotes chunksScored chunksInScope searchSpaceCut
    degraded degradedReason droppedSkills
  }
}"""


def _user(issuer: LocalIssuer, who: str) -> tuple[str, str]:
    """(sub, token) of a fresh user with the groups of the fixture's charlie, alice or bob."""
    sub = f"{who}-{uuid.uuid4().hex[:8]}"
    if who == "charlie":
        token = issuer.mint(sub, groups=["platform-team", "devops-team"], roles=["viewer"],
                            permissions=["memory:read", "skill:read"])  # fmt: skip
    elif who == "alice":
        token = issuer.mint(sub, groups=["data-team"], roles=["viewer"],
                            permissions=["memory:read"])  # fmt: skip
    else:
        token = issuer.mint(sub, groups=["ml-team"], roles=["editor"])
    return sub, token


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as c:
        yield c


async def _ask(client: httpx.AsyncClient, memory: str, token: str, **fields: Any) -> dict[str, Any]:
    response = await client.post(
        "/graphql",
        json={"query": RETRIEVE, "variables": {"input": {"explain": True, **fields}}},
        headers={"Authorization": f"Bearer {token}", "X-Fortemi-Memory": memory},
    )
    body: dict[str, Any] = response.json()
    return body


async def _plan(
    client: httpx.AsyncClient, memory: str, token: str, **fields: Any
) -> dict[str, Any]:
    body = await _ask(client, memory, token, **fields)
    assert "errors" not in body, body
    plan: dict[str, Any] = body["data"]["retrieve"]
    return plan


def _section(chunk: dict[str, Any]) -> str | None:
    heading = chunk["heading"]
    return None if heading is None else heading.split(" > ")[-1]


def _best(plan: dict[str, Any]) -> dict[str, Any]:
    return max(plan["chunks"], key=lambda c: c["score"])


async def _audit(runtime: Runtime, sub: str) -> list[tuple[str, str | None, str, str]]:
    async with runtime.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT resource_type, resource_name, decision, reason FROM public.rbac_audit_log "
            "WHERE user_id = $1 ORDER BY segment, seq",
            sub,
        )
    return [(r["resource_type"], r["resource_name"], r["decision"], r["reason"]) for r in rows]


@pytest.mark.parametrize("case", [q for q in questions() if q.note is not None], ids=str)
async def test_each_labelled_question_is_answered_from_its_note_and_section(
    client: httpx.AsyncClient, homelab: str, issuer: LocalIssuer, case: Any
) -> None:
    _, charlie = _user(issuer, "charlie")
    plan = await _plan(client, homelab, charlie, question=case.question, project=case.project)
    assert not plan["abstained"], plan["strategy"]
    assert _best(plan)["note"]["path"] == case.note
    assert (case.note, case.section) in {(c["note"]["path"], _section(c)) for c in plan["chunks"]}
    assert plan["tokensUsed"] <= plan["tokenBudget"]


async def test_ownership_is_answered_from_the_asking_projects_own_note(
    client: httpx.AsyncClient, homelab: str, issuer: LocalIssuer
) -> None:
    _, charlie = _user(issuer, "charlie")
    poimen = await _plan(client, homelab, charlie, project="poimen",
                         question="Who has ownership of the `logging` namespace?")  # fmt: skip
    rust = await _plan(client, homelab, charlie, project="rust-guide",
                       question="How do I share ownership of a value between threads?")  # fmt: skip
    assert {c["note"]["path"] for c in poimen["chunks"]} <= {
        "projects/poimen/memories/ownership.md",
        "projects/poimen/index.md",
        "projects/poimen/tools/kubectl.md",
        "projects/poimen/debugging/pod-crashes.md",
        "shared/concepts/design-patterns.md",
    }
    assert all(c["note"]["project"] in ("rust-guide", None) for c in rust["chunks"])
    assert _best(poimen)["note"]["path"] == "projects/poimen/memories/ownership.md"
    assert _best(rust)["note"]["path"] == "projects/rust-guide/memories/ownership.md"
    assert poimen["scope"] == rust["scope"] == "project"


class _Counting(RetrievalPlanner):
    """The planner, counting the plans asked of it."""

    def __init__(self, inner: RetrievalPlanner) -> None:  # no super(): it only delegates
        self.inner = inner
        self.calls = 0

    async def plan(
        self,
        memory: str,
        visibility: NoteVisibility,
        request: RetrieveRequest,
        skills: SkillGate,
    ) -> RetrievalPlan:
        self.calls += 1
        return await self.inner.plan(memory, visibility, request, skills)


async def test_a_project_the_caller_may_not_read_is_forbidden_and_audited_before_any_search(
    runtime: Runtime, homelab: str, issuer: LocalIssuer
) -> None:
    counting = _Counting(runtime.services.retrieve)
    variant = dataclasses.replace(
        runtime, services=dataclasses.replace(runtime.services, retrieve=counting)
    )
    sub, alice = _user(issuer, "alice")
    transport = httpx.ASGITransport(app=create_app(variant))
    async with httpx.AsyncClient(transport=transport, base_url="http://fortemi.test") as client:
        body = await _ask(client, homelab, alice, project="poimen",
                          question="Who has ownership of the `logging` namespace?")  # fmt: skip
        assert error_codes(body) == ["FORBIDDEN"]
        assert body["errors"][0]["extensions"]["reason"] == "not_in_allowed_groups"
        assert counting.calls == 0  # refused before the planner (and any search) ran
        allowed = await _ask(client, homelab, alice, project="rust-guide",
                             question="How do I share ownership between threads?")  # fmt: skip
        assert "errors" not in allowed
        assert counting.calls == 1
    decisions = await _audit(runtime, sub)
    assert ("project", "poimen", "deny", "not_in_allowed_groups") in decisions
    assert ("project", "rust-guide", "allow", "access_level_public") in decisions


async def test_a_skill_the_caller_may_not_read_is_dropped_and_its_deny_audited_once(
    client: httpx.AsyncClient, runtime: Runtime, homelab: str, issuer: LocalIssuer
) -> None:
    question = "How do I triage a CUDA out-of-memory error in a training job?"
    sub, charlie = _user(issuer, "charlie")
    plan = await _plan(client, homelab, charlie, question=question)
    assert plan["droppedSkills"] == 1
    assert all(c["note"]["skill"] != "SKILL-private-debug" for c in plan["chunks"])
    assert "cuda-oom-triage" not in str(plan)  # the leak check: not in text, prompt, candidates
    denies = [d for d in await _audit(runtime, sub) if d[0] == "skill"]
    assert denies == [("skill", "SKILL-private-debug", "deny", "not_in_owner_group")]
    _, bob = _user(issuer, "bob")
    owner = await _plan(client, homelab, bob, question=question)
    assert _best(owner)["note"]["skill"] == "SKILL-private-debug"
    assert owner["droppedSkills"] == 1  # bob lacks skill:read, so the Kubernetes skill goes


@pytest.mark.parametrize(
    "case", [q for q in questions() if q.note is None], ids=lambda q: q.question
)
async def test_a_question_the_vault_cannot_answer_abstains_with_a_reason(
    client: httpx.AsyncClient, homelab: str, issuer: LocalIssuer, case: Any
) -> None:
    _, charlie = _user(issuer, "charlie")
    plan = await _plan(client, homelab, charlie, question=case.question, project=case.project)
    assert plan["abstained"] is True
    assert plan["reason"] in ("no_matching_notes", "below_relevance_threshold")
    assert (plan["chunks"], plan["prefixHash"], plan["prompt"], plan["tokensUsed"]) == (
        [], None, None, 0,
    )  # fmt: skip


async def test_the_token_budget_bounds_the_whole_prompt(
    client: httpx.AsyncClient, homelab: str, issuer: LocalIssuer
) -> None:
    _, charlie = _user(issuer, "charlie")
    question = "My pod is in CrashLoopBackOff; how do I see why the last container died?"
    roomy = await _plan(client, homelab, charlie, question=question, project="poimen")
    tight = await _plan(client, homelab, charlie, question=question, project="poimen",
                        tokenBudget=400)  # fmt: skip
    assert roomy["tokensUsed"] <= 4096
    assert 0 < tight["tokensUsed"] <= 400
    assert len(tight["chunks"]) < len(roomy["chunks"])
    assert tight["tokensUsed"] >= sum(c["tokens"] for c in tight["chunks"])
    assert any(c["dropped"] == "over_budget" for c in tight["candidates"])
    long_question = "Why? " + "My pod restarts again and again. " * 60
    over = await _plan(client, homelab, charlie, question=long_question, project="poimen",
                       tokenBudget=256)  # fmt: skip
    assert (over["abstained"], over["reason"]) == (True, "question_over_budget")
    too_small = await _ask(client, homelab, charlie, question=question, tokenBudget=100)
    assert error_codes(too_small) == ["BAD_USER_INPUT"]


async def test_the_same_question_twice_gives_the_same_prompt_and_prefix_hash(
    client: httpx.AsyncClient, homelab: str, issuer: LocalIssuer
) -> None:
    _, charlie = _user(issuer, "charlie")
    question = "What port does Ollama listen on, and how long does a model stay loaded?"
    first = await _plan(client, homelab, charlie, question=question, project="ai-infra")
    second = await _plan(client, homelab, charlie, question=question, project="ai-infra")
    assert first["prefixHash"] == second["prefixHash"]
    assert first["prompt"] == second["prompt"]
    prompt: str = first["prompt"]
    prefix = prompt[: prompt.rindex("Question: ")]
    assert first["prefixHash"] == blake3.blake3(prefix.encode()).hexdigest()
    assert prompt.endswith(f"Question: {question}\nAnswer:")
    # Chunks in prompt order: by note, then position in the note (never by score).
    keys = [(c["note"]["path"], c["position"]) for c in first["chunks"]]
    assert keys == sorted(keys)


async def test_pasted_logs_quotes_and_dashes_are_questions_not_errors(
    client: httpx.AsyncClient, homelab: str, issuer: LocalIssuer
) -> None:
    _, charlie = _user(issuer, "charlie")
    log = "\n".join(
        f'2024-05-01T10:{i:02d}:00Z pod/api-7d9 "Back-off restarting failed container" -- '
        f"exit code 137 — OOMKilled; limit='512Mi' \\ {{}} [] ()"
        for i in range(60)
    )
    pasted = await _plan(client, homelab, charlie, project="poimen",
                         question=f"{log}\n\nWhy does my container keep dying like this?")  # fmt: skip
    assert not pasted["abstained"]
    assert pasted["tokensUsed"] <= pasted["tokenBudget"]
    assert "projects/poimen/debugging/pod-crashes.md" in {
        c["note"]["path"] for c in pasted["chunks"]
    }
    for odd in ('"""', "— -- -", "'; DROP TABLE note; --", "-kubectl -'rollout'"):
        plan = await _plan(client, homelab, charlie, question=odd, project="poimen")
        assert plan["tokensUsed"] <= plan["tokenBudget"]
    empty = await _ask(client, homelab, charlie, question="   ")
    assert error_codes(empty) == ["BAD_USER_INPUT"]
    huge = await _ask(client, homelab, charlie, question="pod " * 6000)
    assert error_codes(huge) == ["BAD_USER_INPUT"]


async def test_a_project_without_notes_is_not_found_once_the_caller_may_read_it(
    client: httpx.AsyncClient, homelab: str, issuer: LocalIssuer
) -> None:
    _, charlie = _user(issuer, "charlie")
    body = await _ask(client, homelab, charlie, question="anything", project="empty-project")
    assert error_codes(body) == ["NOT_FOUND"]
    nameless = await _ask(client, homelab, charlie, question="anything", project="no-policy")
    assert error_codes(nameless) == ["FORBIDDEN"]  # default deny decides before existence


async def test_the_plan_explains_its_candidates_and_how_much_routing_cut(
    client: httpx.AsyncClient, homelab: str, issuer: LocalIssuer
) -> None:
    _, charlie = _user(issuer, "charlie")
    plan = await _plan(client, homelab, charlie, project="ai-infra",
                       question="What does vLLM's `--gpu-memory-utilization` do?")  # fmt: skip
    candidates = plan["candidates"]
    assert plan["candidateCount"] == len(candidates) == plan["chunksScored"]
    fused = [c["fusedScore"] for c in candidates]
    assert fused == sorted(fused, reverse=True)
    assert sum(c["selected"] for c in candidates) == len(plan["chunks"])
    assert all(c["semanticScore"] is not None for c in candidates)
    assert plan["chunksScored"] <= plan["chunksInScope"]
    assert plan["searchSpaceCut"] == pytest.approx(1 - plan["chunksScored"] / plan["chunksInScope"])
    assert "TF-IDF" in plan["strategy"]
    assert plan["degraded"] is False
    memory_wide = await _plan(client, homelab, charlie,
                              question="What does vLLM's `--gpu-memory-utilization` do?")  # fmt: skip
    assert memory_wide["scope"] == "memory"
    assert memory_wide["chunksInScope"] > plan["chunksInScope"]


class _Links:
    """The link graph's reachable sets as the homelab README lists them (poimen reaches
    the Kubernetes debugging skill through its kubectl note)."""

    def __init__(self, ids: dict[str, UUID]) -> None:
        self.ids = ids
        self.asked: list[tuple[str, str]] = []

    async def reachable(self, memory: str, vault: str, project: str) -> set[UUID]:
        self.asked.append((vault, project))
        extra = {"poimen": ["shared/skills/SKILL-kubernetes-debugging/SKILL.md"]}
        return {
            note_id
            for path, note_id in self.ids.items()
            if path.startswith(f"projects/{project}/") or path in extra.get(project, [])
        }


async def test_a_linked_reach_plugs_into_the_scope_and_its_skills_are_checked(
    runtime: Runtime, homelab: str
) -> None:
    async with runtime.db.memory_transaction(homelab) as conn:
        rows = await conn.fetch("SELECT id, metadata ->> 'path' AS path FROM note")
    links = _Links({row["path"]: row["id"] for row in rows})
    scoped = ScopedRetrieval(runtime.db, runtime.backend)
    planner = RetrievalPlanner(scoped, PlanSettings(), resolver=LinkedReach(links, scoped))
    asked: list[list[str]] = []

    def gate(allowed: set[str]) -> SkillGate:
        async def decide(names: Iterable[str]) -> set[str]:
            asked.append(sorted(names))
            return set(names) & allowed

        return decide

    question = RetrieveRequest(
        question="What is the checklist for debugging a Kubernetes workload?", project="poimen"
    )
    everyone = NameSet(frozenset(), only=False)
    reader = NoteVisibility(memory_notes=True, projects=everyone, skills=everyone)
    plan = await planner.plan(homelab, reader, question, gate(set()))
    assert links.asked == [("homelab", "poimen")]  # the vault of the project's notes
    assert "shared/skills/SKILL-kubernetes-debugging/SKILL.md" in {c.path for c in plan.chunks}
    assert all(c.project in ("poimen", None) for c in plan.chunks)
    assert asked == []  # readable skills are never asked about again
    no_skills = NoteVisibility(memory_notes=True, projects=everyone, skills=NameSet())
    refused = await planner.plan(homelab, no_skills, question, gate(set()))
    assert asked == [["SKILL-kubernetes-debugging"]]
    assert refused.dropped_skills == ["SKILL-kubernetes-debugging"]
    assert all(c.skill is None for c in refused.chunks)
    readmitted = await planner.plan(
        homelab, no_skills, question, gate({"SKILL-kubernetes-debugging"})
    )
    assert readmitted.dropped_skills == []
    assert any(c.skill == "SKILL-kubernetes-debugging" for c in readmitted.chunks)


async def test_a_named_vault_scopes_the_plan_to_its_notes(
    client: httpx.AsyncClient, homelab: str, issuer: LocalIssuer
) -> None:
    _, charlie = _user(issuer, "charlie")
    question = "How do I open Grafana's web UI from my laptop when it has no Ingress?"
    inside = await _plan(client, homelab, charlie, question=question, project="poimen",
                         vault="homelab")  # fmt: skip
    assert _best(inside)["note"]["path"] == "projects/poimen/tools/kubectl.md"
    assert "vault 'homelab'" in inside["strategy"]
    elsewhere = await _ask(client, homelab, charlie, question=question, project="poimen",
                           vault="another")  # fmt: skip
    assert error_codes(elsewhere) == ["NOT_FOUND"]
    nothing = await _plan(client, homelab, charlie, question=question, vault="another")
    assert (nothing["abstained"], nothing["reason"]) == (True, "no_matching_notes")


async def test_search_explains_whether_the_semantic_leg_scanned_or_searched_the_index(
    client: httpx.AsyncClient, homelab: str, issuer: LocalIssuer
) -> None:
    _, charlie = _user(issuer, "charlie")
    query = """query($ef: Int) {
      search(query: "how are backups restored", mode: SEMANTIC, explain: true, efSearch: $ef) {
        hits { note { id } } semantic { path efSearch } } }"""
    answers = []
    for ef in (None, 64):
        response = await client.post(
            "/graphql",
            json={"query": query, "variables": {"ef": ef}},
            headers={"Authorization": f"Bearer {charlie}", "X-Fortemi-Memory": homelab},
        )
        body = response.json()
        assert "errors" not in body, body
        answers.append(body["data"]["search"])
    scanned, searched = answers
    # The vault's few hundred chunks are read exactly, never through the index (scanned;
    # again when statistics still undercount them, or every readable chunk when the
    # caller's read scope leaves too few); asked for a list, the index answers.
    steps = scanned["semantic"]["path"].split(",")
    assert steps[0] == "scan"
    assert set(steps) <= {"scan", "exact"}
    assert scanned["semantic"]["efSearch"] is None
    # A client's list searches the index (again, longer, when one note's chunks crowd it).
    searched_steps = searched["semantic"]["path"].split(",")
    assert searched_steps[0] == "hnsw"
    assert set(searched_steps) <= {"hnsw", "exact"}
    assert searched["semantic"]["efSearch"] >= 64
    assert scanned["hits"][0] == searched["hits"][0]
