"""The tenant choke point is the only code that sets search_path (a lint, as a test)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "fortemi"
CHOKE_POINT = PACKAGE / "platform" / "database.py"


def test_only_the_choke_point_sets_search_path() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path != CHOKE_POINT
        and re.search(r"search_path|set_config", path.read_text(encoding="utf-8"), re.I)
    ]
    assert offenders == []


def test_memory_sql_templates_never_name_a_schema() -> None:
    templates = PACKAGE.parent / "migrations" / "memory"
    for path in templates.glob("*.sql"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\b(public|mem_\w+)\.", text), path.name
