"""The dependency direction of DESIGN.md, checked from the imports (a lint, as a test).

Every module under ``fortemi/`` is parsed with :mod:`ast`; each import of our own package
(absolute or relative, at module level, inside a function or under ``TYPE_CHECKING``) is
mapped from the top-level folder or module it is in to the one it names, and checked
against :data:`ALLOWED`:

* ``platform`` imports no other package of ours; ``auth``, ``inference`` and ``workers``
  import ``platform`` only;
* a feature folder imports ``platform``, ``auth``, ``inference`` and another feature's
  ``service`` module only (never its repository, models or SQL);
* ``graphql`` imports the features, ``auth`` and ``platform``;
* ``mcp`` (tools that run GraphQL operations) imports ``graphql`` and what it may;
* the edge modules (:data:`EDGE`) import everything: ``runtime.py`` (the composition root),
  the ``cli`` package and ``__main__.py`` (the command line), ``app.py`` (the ASGI application it
  serves) and ``http_metrics.py`` (the ``/metrics`` endpoint, which reads the runtime).
  ``console.py`` is the command line's terminal helpers and imports nothing of ours.

Nothing but an edge module may import an edge module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "fortemi"

FEATURES = frozenset({"retrieval", "graph", "wiki", "documents", "crypto", "webhooks"})
EDGE = frozenset({"runtime", "cli", "__main__", "app", "http_metrics"})
ROOT = "fortemi"  # the package's own __init__.py: imports nothing, importable by all

ALLOWED: Mapping[str, frozenset[str]] = {
    ROOT: frozenset(),
    "platform": frozenset(),
    "console": frozenset(),
    "auth": frozenset({"platform"}),
    "inference": frozenset({"platform"}),
    "workers": frozenset({"platform"}),
    "graphql": FEATURES | {"auth", "platform"},
    "mcp": FEATURES | {"graphql", "auth", "platform"},
    **{feature: frozenset({"platform", "auth", "inference"}) for feature in FEATURES},
}

_RULES: Mapping[str, str] = {
    ROOT: "the package's __init__ imports no module of ours",
    "platform": "platform imports no other package of ours",
    "console": "console imports no other module of ours",
    "auth": "auth imports platform only",
    "inference": "inference imports platform only",
    "workers": "workers imports platform only (it runs what the composition root registers)",
    "graphql": "graphql imports the features, auth and platform only",
    "mcp": "mcp imports graphql, the features, auth and platform only",
}
_FEATURE_RULE = (
    "a feature imports platform, auth, inference and another feature's service module only"
)


@dataclass(frozen=True)
class Violation:
    path: str  # relative to the package folder, e.g. "graphql/context.py"
    line: int
    imported: str  # the dotted name imported, e.g. "fortemi.runtime.Runtime"
    target: str  # the top-level folder or module it belongs to
    rule: str

    def __str__(self) -> str:
        return f"fortemi/{self.path}:{self.line} imports {self.imported}: {self.rule}"


def unit_of(path: str) -> str:
    """The top-level folder or module a file (relative to the package) belongs to."""
    parts = Path(path).parts
    if len(parts) > 1:
        return parts[0]
    stem = Path(path).stem
    return ROOT if stem == "__init__" else stem


def _module_name(path: str) -> tuple[str, str]:
    """``(module, package)``: the dotted name of the file and the package relative
    imports in it are resolved against."""
    parts = [ROOT, *Path(path).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def imports_of(source: str, path: str) -> Iterator[tuple[int, str]]:
    """``(line, dotted name)`` of every import of our package in ``source``.

    ``from a.b import c`` yields ``a.b.c``: ``c`` may be a module or a name in ``a.b``,
    and either way the import reaches into ``a.b``.
    """
    _, package = _module_name(path)
    for node in ast.walk(ast.parse(source, filename=path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                base_parts = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                yield node.lineno, base if alias.name == "*" else f"{base}.{alias.name}"


def _rule_broken(source_unit: str, name: str) -> tuple[str, str | None]:
    """``(target unit, the rule it breaks or None)`` for an import of ``name``."""
    parts = name.split(".")
    target = ROOT if len(parts) == 1 else parts[1]
    if target == source_unit or (target == ROOT and len(parts) == 1):
        return target, None
    if source_unit in EDGE:
        return target, None
    if target in EDGE:
        return target, "only the edge modules import an edge module"
    if source_unit in FEATURES and target in FEATURES:
        ok = parts[2:3] == ["service"]
        return target, None if ok else _FEATURE_RULE
    allowed = ALLOWED.get(source_unit)
    if allowed is None:
        return target, f"{source_unit} is not in the dependency rule (add it to DESIGN.md)"
    if target in allowed:
        return target, None
    return target, _RULES.get(source_unit, _FEATURE_RULE)


def violations(source: str, path: str) -> list[Violation]:
    """Every import in ``source`` (the file ``path``, relative to the package) that runs
    against the dependency direction."""
    source_unit = unit_of(path)
    found = []
    for line, name in imports_of(source, path):
        if name != ROOT and not name.startswith(f"{ROOT}."):
            continue  # not ours
        target, rule = _rule_broken(source_unit, name)
        if rule is not None:
            found.append(Violation(path, line, name, target, rule))
    return found


def package_violations(package: Path) -> list[Violation]:
    found = []
    for file in sorted(package.rglob("*.py")):
        path = file.relative_to(package).as_posix()
        found.extend(violations(file.read_text(encoding="utf-8"), path))
    return found


# -- the package -----------------------------------------------------------------------


def test_every_import_follows_the_dependency_direction() -> None:
    broken = package_violations(PACKAGE)

    assert not broken, "imports against DESIGN.md's dependency direction:\n" + "\n".join(
        map(str, broken)
    )


# -- the checker, on modules written for the purpose ------------------------------------


def test_the_checker_names_the_file_the_line_and_the_rule_broken() -> None:
    source = "import os\n\nfrom fortemi.retrieval.search import SearchService\n"

    [violation] = violations(source, "platform/lookup.py")

    assert str(violation) == (
        "fortemi/platform/lookup.py:3 imports fortemi.retrieval.search.SearchService: "
        "platform imports no other package of ours"
    )


@pytest.mark.parametrize(
    ("path", "source", "rule"),
    [
        pytest.param(
            "workers/pool.py",
            "from fortemi.retrieval.indexing import EMBEDDING\n",
            "workers imports platform only (it runs what the composition root registers)",
            id="workers-knows-a-feature",
        ),
        pytest.param(
            "webhooks/delivery.py",
            "from fortemi.retrieval.sets import EmbeddingSets\n",
            _FEATURE_RULE,
            id="feature-reads-another-features-repository",
        ),
        pytest.param(
            "webhooks/delivery.py",
            "from fortemi.retrieval import SearchService\n",
            _FEATURE_RULE,
            id="feature-reads-another-features-package",
        ),
        pytest.param(
            "graphql/audit.py",
            "from fortemi.runtime import AUDIT_CHANNEL\n",
            "only the edge modules import an edge module",
            id="graphql-reads-the-composition-root",
        ),
        pytest.param(
            "graphql/notes/types.py",
            "from ...runtime import Runtime\n",
            "only the edge modules import an edge module",
            id="relative-import",
        ),
        pytest.param(
            "graphql/notes/types.py",
            "from .. import context\nfrom ... import workers\n",
            "graphql imports the features, auth and platform only",
            id="relative-import-of-a-package",
        ),
        pytest.param(
            "auth/tokens.py",
            "def f():\n    from fortemi.graphql.errors import mask\n",
            "auth imports platform only",
            id="import-inside-a-function",
        ),
        pytest.param(
            "inference/local.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import fortemi.auth\n",
            "inference imports platform only",
            id="type-checking-import",
        ),
        pytest.param(
            "graphql/search.py",
            "from fortemi.inference.backend import EmbeddingBackend\n",
            "graphql imports the features, auth and platform only",
            id="graphql-skips-the-features",
        ),
        pytest.param(
            "billing/service.py",
            "from fortemi.platform.ids import new_id\n",
            "billing is not in the dependency rule (add it to DESIGN.md)",
            id="unknown-folder",
        ),
    ],
)
def test_the_checker_catches_an_import_against_the_direction(
    path: str, source: str, rule: str
) -> None:
    found = violations(source, path)

    assert found
    assert {v.rule for v in found} == {rule}


@pytest.mark.parametrize(
    ("path", "source"),
    [
        pytest.param(
            "webhooks/delivery.py",
            "from fortemi.retrieval.service import SearchService\n",
            id="feature-uses-another-features-service",
        ),
        pytest.param(
            "wiki/answers.py",
            "from fortemi.retrieval import service\n",
            id="feature-imports-another-features-service-module",
        ),
        pytest.param(
            "graphql/search.py",
            "from fortemi.retrieval.search import SearchService\nimport fortemi.auth\n",
            id="graphql-uses-a-feature-and-auth",
        ),
        pytest.param(
            "retrieval/search.py",
            "from fortemi.inference.backend import EmbeddingBackend\nfrom . import fusion\n",
            id="feature-uses-inference-and-itself",
        ),
        pytest.param(
            "runtime.py",
            "from fortemi.workers.pool import WorkerPool\nfrom fortemi.graphql import schema\n",
            id="composition-root",
        ),
        pytest.param(
            "cli.py", "from fortemi import console\nfrom fortemi.app import build\n", id="cli"
        ),
        pytest.param(
            "cli/vault.py",
            "from fortemi.cli.common import seconds\nfrom fortemi.wiki.vaults.client import scan\n"
            "from fortemi.runtime import Runtime\n",
            id="cli-package-module",
        ),
        pytest.param("platform/jobs/service.py", "import json\nimport fortemi\n", id="stdlib"),
    ],
)
def test_the_checker_accepts_an_import_along_the_direction(path: str, source: str) -> None:
    assert violations(source, path) == []
