"""What ``fortemi ask`` sends and prints: the ``ask`` query, and the answer with its
citations (path and heading), or why there is none and the chunks the plan selected."""

from __future__ import annotations

import sys
from typing import Any, TextIO

__all__ = ["ASK_QUERY", "print_answer"]

ASK_QUERY = """query($input: AskInput!) {
  ask(input: $input) {
    answer citations { number path heading } droppedCitations llmCalls model
    degraded degradedReason reason tookMs
    plan { abstained reason chunks { note { path title } heading } }
  }
}"""


def _where(path: str | None, title: str | None, heading: str | None) -> str:
    where = path or title or "(untitled)"
    return f"{where} > {heading}" if heading else where


def print_answer(answer: dict[str, Any], stream: TextIO = sys.stdout) -> int:
    """Print ``answer`` (the ``ask`` field). Returns the exit code: 0 with an answer,
    else 3 (argparse already uses 2 for a usage error)."""
    plan = answer["plan"]
    if answer["answer"] is not None:
        print(answer["answer"], file=stream)
        if answer["citations"]:
            print("\nSources:", file=stream)
            for c in answer["citations"]:
                print(f"  [{c['number']}] {_where(c['path'], None, c['heading'])}", file=stream)
        if answer["droppedCitations"]:
            print(f"({answer['droppedCitations']} citation(s) named no source)", file=stream)
        if answer["reason"]:
            print(f"({answer['reason']})", file=stream)
        return 0
    reason = answer["reason"] or "no_answer"
    if plan["abstained"]:
        print(f"no answer: {reason} ({plan['reason']})", file=stream)
        return 3
    print(f"no answer: {reason}", file=stream)
    if answer["degraded"]:
        print("no generation backend is configured (set OLLAMA_HOST); the plan:", file=stream)
    for number, c in enumerate(plan["chunks"], start=1):
        note = c["note"]
        print(f"  [{number}] {_where(note['path'], note['title'], c['heading'])}", file=stream)
    return 3
