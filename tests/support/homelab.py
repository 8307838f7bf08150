"""The homelab test vault (tests/data/vaults/homelab) as notes, the way a vault sync
stores them: external source ``vault:homelab``, ``metadata.path`` and ``metadata.vault``,
the project or skill from the path, title and aliases from front matter (else the first
heading), and its labelled questions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["HOMELAB", "QUESTIONS", "Question", "questions", "vault_items"]

HOMELAB = Path(__file__).resolve().parents[1] / "data" / "vaults" / "homelab"
QUESTIONS = HOMELAB / "questions.yaml"


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    project: str | None
    note: str | None  # vault-relative path of the note that answers; None: unanswerable
    section: str | None


def questions(path: Path = QUESTIONS) -> list[Question]:
    return [Question(**item) for item in yaml.safe_load(path.read_text(encoding="utf-8"))]


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return yaml.safe_load(text[4:end]) or {}, text[end + 5 :]
    return {}, text


def _words(value: object, *, split: bool = True) -> list[str]:
    """A front-matter list, also when written as one string (tags: comma- or
    space-separated; an alias: one alias)."""
    if isinstance(value, str):
        return [w for w in value.replace(",", " ").split() if w] if split else [value]
    if isinstance(value, list):
        return [str(word) for word in value if word is not None]
    return []


def vault_items(root: Path = HOMELAB / "vault", vault: str = "homelab") -> list[dict[str, Any]]:
    """One ``upsertExternalNotes`` item per markdown file of ``root``."""
    items = []
    for file in sorted(root.rglob("*.md")):
        path = file.relative_to(root).as_posix()
        meta, body = _front_matter(file.read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            meta = {}
        heading = next(
            (line[2:].strip() for line in body.splitlines() if line.startswith("# ")), None
        )
        parts = path.split("/")
        project = parts[1] if parts[0] == "projects" and len(parts) > 2 else None
        skill = parts[2] if parts[:2] == ["shared", "skills"] and len(parts) > 3 else None
        items.append(
            {
                "externalId": path,
                "title": str(meta.get("title") or heading or file.stem),
                "content": body,
                "format": "markdown",
                "metadata": {
                    "path": path,
                    "vault": vault,
                    "aliases": _words(meta.get("aliases"), split=False),
                },
                "tags": _words(meta.get("tags")),
                "project": project,
                "skill": skill,
            }
        )
    return items
