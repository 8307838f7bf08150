"""Connections used inside a transaction go back to the pool without the session reset
(fortemi.platform.database._Reset): no statement in the code or the migrations may leave
session state behind. A lint, as a test: session advisory locks, LISTEN, cursors WITH
HOLD, temporary tables, named prepared statements and non-local SETs are reported outside
the modules that run on a bare connection, whose release resets the session in full."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_SESSION_STATE = re.compile(
    r"pg_(try_)?advisory_lock(_shared)?\s*\("
    r"|\bLISTEN\s+\w"
    r"|\bWITH\s+HOLD\b"
    r"|\bCREATE\s+(GLOBAL\s+|LOCAL\s+)?TEMP(ORARY)?\s+TABLE\b"
    r"|\bPREPARE\s+\w+\s*(\(|AS\b)"
    r"|set_config\s*\([^)]*,\s*false\s*\)"
    # A statement's own SET, not an UPDATE's: at the start of the text or after a ';'.
    r"|(\A|;)\s*SET\s+(?!LOCAL\b)(SESSION\s+)?[a-z_.]+\s*(TO\b|=)",
    re.IGNORECASE,
)
# Run on bare connections (Database.connection), reset in full on release.
_BARE = frozenset({"fortemi/platform/migrations.py"})


def _strings(path: Path) -> list[str]:
    if path.suffix == ".sql":
        return [path.read_text()]
    tree = ast.parse(path.read_text())
    # Docstrings describe statements; they are not run.
    prose = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
    ]


def _offenders() -> list[str]:
    found = []
    files = [
        *sorted((ROOT / "fortemi").rglob("*.py")),
        *sorted((ROOT / "migrations").rglob("*.sql")),
    ]
    for path in files:
        name = path.relative_to(ROOT).as_posix()
        if name in _BARE:
            continue
        for text in _strings(path):
            match = _SESSION_STATE.search(text)
            if match is not None:
                found.append(f"{name}: {match.group(0)!r}")
    return found


def test_no_code_inside_a_transaction_leaves_session_state_behind() -> None:
    assert _offenders() == []


def test_the_lint_sees_each_kind_of_session_state() -> None:
    for statement in (
        "SELECT pg_advisory_lock($1)",
        "LISTEN jobs",
        "DECLARE c CURSOR WITH HOLD FOR SELECT 1",
        "CREATE TEMP TABLE t (id int)",
        "PREPARE q AS SELECT 1",
        "SELECT set_config('work_mem', '8MB', false)",
        "SET work_mem = '8MB'",
        "BEGIN; SET search_path TO x",
    ):
        assert _SESSION_STATE.search(statement), statement
    for statement in (
        "SELECT pg_advisory_xact_lock($1)",
        "SET LOCAL work_mem = 8192",
        "SELECT set_config($1, $2, true)",
        "UPDATE note SET title = $1",
        "INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET x = 1",
    ):
        assert not _SESSION_STATE.search(statement), statement
