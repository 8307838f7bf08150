"""Prompts: ready-made requests a user picks in their agent, filled from their memory."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from starlette.requests import Request

from fortemi.mcp.gateway import Gateway, bad_input, outcome_error

__all__ = ["PROMPTS", "render_prompt"]

Render = Callable[[Gateway, Request, Mapping[str, str]], Awaitable[str]]

_CHANGED = """query summarise_changes($filter: NoteFilter!, $first: Int!) {
  notes(first: $first, filter: $filter) { edges { node { id title path version updatedAt } } } }"""
_MAX_CHANGED = 100


async def _answer(gateway: Gateway, request: Request, arguments: Mapping[str, str]) -> str:
    question = arguments["question"]
    return (
        "Answer the question below from my Fortemi memory, not from general knowledge.\n"
        "1. Call retrieve_context (or ask_memory) with the question"
        + (f" and project {arguments['project']!r}" if arguments.get("project") else "")
        + "; search_notes with other words if it abstains.\n"
        "2. Answer only with what the passages say; cite each claim as [n] and list the "
        "cited notes at the end with their fortemi://<memory>/notes/<id> URIs.\n"
        "3. If the memory does not hold the answer, say so instead of guessing.\n\n"
        f"Question: {question}"
    )


async def _changes(gateway: Gateway, request: Request, arguments: Mapping[str, str]) -> str:
    project = arguments["project"]
    try:
        days = max(1, min(int(arguments.get("days") or 7), 366))
    except ValueError:
        raise MCPError(
            types.INVALID_PARAMS,
            "BAD_USER_INPUT: days must be a whole number",
            {"code": "BAD_USER_INPUT"},
        ) from None
    since = datetime.now(UTC) - timedelta(days=days)
    outcome = await gateway.run(
        request,
        "summarise_changes",
        _CHANGED,
        {"filter": {"project": project, "updatedAfter": since.isoformat()}, "first": _MAX_CHANGED},
        memory=arguments.get("memory"),
        audit_name="mcp:prompts/summarise_project_changes",
    )
    if outcome.failed:
        raise outcome_error(outcome)
    edges = ((outcome.data or {}).get("notes") or {}).get("edges") or []
    lines = [
        f"- {e['node']['title'] or '(untitled)'} (id {e['node']['id']}, version "
        f"{e['node']['version']}, changed {e['node']['updatedAt']})"
        for e in edges
    ]
    listing = "\n".join(lines) if lines else "(no note of this project changed in that time)"
    return (
        f"Summarise what changed in project {project!r} over the last {days} days, from my "
        "Fortemi memory. The notes changed in that time are listed below. Read each with "
        "get_note (its versions show what changed), then write: the main changes grouped by "
        "theme, decisions taken, open questions. Cite notes by id.\n\n" + listing
    )


def _prompt(name: str, description: str, *arguments: tuple[str, str, bool]) -> types.Prompt:
    return types.Prompt(
        name=name,
        description=description,
        arguments=[
            types.PromptArgument(name=n, description=d, required=r) for n, d, r in arguments
        ],
    )


PROMPTS: Mapping[str, tuple[types.Prompt, Render]] = {
    "answer_from_memory": (
        _prompt(
            "answer_from_memory",
            "Answer a question from my memory, citing the notes used",
            ("question", "The question", True),
            ("project", "Only this project's notes and the shared ones it links to", False),
        ),
        _answer,
    ),
    "summarise_project_changes": (
        _prompt(
            "summarise_project_changes",
            "Summarise what changed in a project this week (or the last `days` days)",
            ("project", "The project", True),
            ("days", "How many days back (default 7)", False),
            ("memory", "The memory (default: your default memory)", False),
        ),
        _changes,
    ),
}


async def render_prompt(
    gateway: Gateway, request: Request, name: str, arguments: Mapping[str, Any]
) -> types.GetPromptResult:
    entry = PROMPTS.get(name)
    if entry is None:
        raise MCPError(types.INVALID_PARAMS, f"No prompt {name!r}; see prompts/list")
    prompt, render = entry
    given = {key: str(value) for key, value in arguments.items()}
    missing = [a.name for a in prompt.arguments or () if a.required and not given.get(a.name)]
    if missing:
        raise bad_input(f"prompt {name!r} needs {', '.join(missing)}")
    text = await render(gateway, request, given)
    return types.GetPromptResult(
        description=prompt.description,
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
    )
