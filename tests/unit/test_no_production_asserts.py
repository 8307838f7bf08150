"""No invariant of the package rests on ``assert``: ``python -O`` strips every one of them,
so a broken invariant would go on silently instead of raising (a lint, as a test)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fortemi"


def asserts_in(source: str) -> list[int]:
    """The lines of the ``assert`` statements in ``source``."""
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Assert)]


def test_no_module_of_the_package_asserts() -> None:
    found = [
        f"fortemi/{file.relative_to(PACKAGE).as_posix()}:{line}"
        for file in sorted(PACKAGE.rglob("*.py"))
        for line in asserts_in(file.read_text(encoding="utf-8"))
    ]

    assert found == [], "raise an error instead of asserting:\n" + "\n".join(found)


def test_the_lint_finds_an_assert_however_nested() -> None:
    source = "def f(x):\n    if x:\n        assert x > 0, 'positive'\n    return x\n"

    assert asserts_in(source) == [3]
