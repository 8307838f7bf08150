"""What `fortemi ask` prints for an answer, with its sources and what it dropped."""

from __future__ import annotations

import io
from typing import Any

from fortemi.wiki.answers.client import print_answer


def _answer(**fields: Any) -> dict[str, Any]:
    plan: dict[str, Any] = {"abstained": False, "reason": None, "chunks": []}
    return {"answer": None, "citations": [], "droppedCitations": 0, "reason": None,
            "degraded": False, "plan": plan, **fields}  # fmt: skip


def test_an_answer_is_printed_with_its_sources_and_exit_code_0() -> None:
    out = io.StringIO()
    citations = [
        {"number": 2, "path": "projects/poimen/memories/ownership.md", "heading": "Logging"},
        {"number": 1, "path": "shared/glossary.md", "heading": None},
    ]
    answer = _answer(answer="The platform team [2][1][7].", citations=citations,
                     droppedCitations=1)  # fmt: skip
    assert print_answer(answer, out) == 0
    assert out.getvalue().splitlines() == [
        "The platform team [2][1][7].",
        "",
        "Sources:",
        "  [2] projects/poimen/memories/ownership.md > Logging",
        "  [1] shared/glossary.md",
        "(1 citation(s) named no source)",
    ]


def test_a_truncated_answer_says_so() -> None:
    out = io.StringIO()
    assert print_answer(_answer(answer="The plat", reason="answer_truncated"), out) == 0
    assert out.getvalue().splitlines() == ["The plat", "(answer_truncated)"]
