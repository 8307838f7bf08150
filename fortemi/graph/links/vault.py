"""Wiki links inside a vault: the keys of vault notes, and the ordered candidate keys of a
reference written in one.

A note belongs to vault ``V`` when its ``metadata.vault`` is ``V`` and its
``metadata.path`` is its vault-relative POSIX path (what the vault sync writes). A
reference written in such a note resolves only among the notes of the same vault, by the
first of these rules that finds a note:

1. **path**: the target taken relative to the source's folder (a leading ``/``: relative
   to the vault root), ``..`` stopping at the vault root; as written (``.md`` or not), then
   as a folder with ``SKILL.md``, then with ``index.md``;
2. **suffix**: the target without its leading ``./`` and ``../`` segments, as a path
   suffix of the vault's files, whole segments only (``kubectl`` is a suffix of
   ``tools/kubectl.md``, not of ``tools/xkubectl.md``), with the same appendices: what
   Obsidian does with partial paths and bare names, and what rescues links whose ``..``
   climb too far or not far enough (the homelab fixture has four of those);
3. **title**, then **alias**: the target as a title or alias of a note of the vault, for
   links written by name rather than by file (``[[Pod Crashes]]``);
4. else the reference dangles.

Within one rule (and one appendix), one matching note wins; several matching notes are
decided by the source's own project (exactly one of them in it wins), otherwise the
reference is *ambiguous*: it dangles, with the number of notes that matched kept. A
soft-deleted note never matches, so deleting a file makes its links dangle or fall to the
next rule.

Keys. Each rule is an equality on a key, so resolving a reference is one index probe per
candidate, never a scan of the vault's paths (``LIKE '%/kubectl'`` cannot use a b-tree). A
vault note stores every key any reference could look for it by: its path, its folder
(for ``SKILL.md``/``index.md``), each whole-segment suffix of both, its title and aliases,
each prefixed by the vault and the rule (``V␟suffix␟tools/kubectl``), so vaults never meet
and a note outside every vault, whose keys :func:`~fortemi.graph.links.resolution.fold`
collapses ``␟`` out of, can never produce one. A note in a project also has its suffix,
title and alias keys once more with the project (``V␟suffix␟poimen␟ownership``), and a
reference from a project tries that key just before the vault-wide one: the own-project
preference is then an index probe too (exactly one own match wins; none: the vault-wide
key decides; several: ambiguous, as several vault-wide matches are). A note of depth *d*
has at most 4·*d* + 2 vault keys (2·*d* + 3 unless it is a SKILL.md or index.md),
plus two per alias.

A reference stores its candidates in order and the rank that decided it. When a note gains
or loses a key, every reference with that key among its candidates *at or before its
deciding rank* is resolved again (a key ranked after it cannot change the outcome), so the
result does not depend on the order in which notes arrive, and a note named ``index.md``
arriving in the twelfth project does not re-resolve every ``[[index]]`` of the other
eleven.

Dendron vaults (``metadata.flavour == "dendron"``) write ``[[label|target]]`` (the
other way round), name notes by dot hierarchy (``a.b.c`` is the file ``a.b.c.md``, which
rule 1 finds as written) and may prefix ``dendron://vault/``, which is dropped.

Notes outside vaults keep the rules of :class:`~fortemi.graph.links.resolution.KeyRules`,
and vault notes keep those keys too, so a note outside a vault still finds a vault note
by title, alias or path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from fortemi.graph.links.resolution import KeyRules, NoteKey, fold
from fortemi.graph.links.wiki import WikiRef

__all__ = ["Candidate", "VaultKeyRules", "vault_key", "vault_of"]

# Separates vault, rule and key in a vault key (fold() turns it into a space, so no key of
# a note outside vaults, and no reference outside vaults, can contain it).
_SEP = "\x1f"
# Folder notes: ``[[folder]]`` finds ``folder/SKILL.md``, else ``folder/index.md``.
_FOLDER_NOTES = ("skill", "index")
_APPENDICES = ("", "+skill", "+index")  # as written (.md or not), /SKILL.md, /index.md
_DENDRON_PREFIX = "dendron://"
_MAX_DEPTH = 32  # segments of a path keyed by suffix (deeper paths: the last 32)
_MAX_KEY_BYTES = 2000


@dataclass(frozen=True, slots=True)
class Candidate:
    """One key a vault reference looks for, and the rule it stands for."""

    rule: str  # path | suffix | title | alias
    key: str


def vault_of(metadata: Mapping[str, Any]) -> tuple[str, str] | None:
    """(vault, vault-relative path) of a note synced from a vault; None for other notes."""
    vault, path = metadata.get("vault"), metadata.get("path")
    if isinstance(vault, str) and vault.strip() and isinstance(path, str) and path.strip():
        return vault, path
    return None


def vault_key(vault: str, tag: str, key: str, project: str | None = None) -> str:
    """A vault-scoped key; with ``project``, one only that project's notes have."""
    if project is None:
        return f"{vault}{_SEP}{tag}{_SEP}{key}"
    return f"{vault}{_SEP}{tag}{_SEP}{project}{_SEP}{key}"


def _project(segments: list[str]) -> str | None:
    """The project of a vault path: ``<p>`` under ``projects/<p>/``."""
    return segments[1] if len(segments) > 2 and segments[0] == "projects" else None


def _segments(path: str) -> list[str]:
    """``path``'s segments, ``.`` and empty ones dropped, ``..`` removing the one before
    it and stopping at the root (clamped, never above it)."""
    found: list[str] = []
    for part in path.replace("\\", "/").split("/"):
        part = part.strip()
        if part in ("", "."):
            continue
        if part == "..":
            if found:
                found.pop()
            continue
        found.append(part)
    return found


def _unclimbed(target: str) -> list[str]:
    """The target without its leading ``./`` and ``../`` (and ``/``) segments."""
    parts = [p.strip() for p in target.replace("\\", "/").split("/")]
    while parts and parts[0] in ("", ".", ".."):
        parts.pop(0)
    return _segments("/".join(parts))


def _indexable(key: str) -> bool:
    """Whether ``key`` fits a b-tree index entry (at most ~2.7 kB; a longer key names
    nothing in practice and would fail the whole write)."""
    return len(key.encode("utf-8")) <= _MAX_KEY_BYTES


def _folder_note(name: str) -> str | None:
    """``skill`` or ``index`` when ``name`` is ``SKILL.md`` or ``index.md`` (any case)."""
    stem = fold(name)
    return stem if stem in _FOLDER_NOTES and name.strip().lower().endswith(".md") else None


class VaultKeyRules(KeyRules):
    """:class:`KeyRules` with the vault rules (see the module's docstring)."""

    def note_keys(self, title: str, content: str, metadata: Mapping[str, Any]) -> set[NoteKey]:
        keys = super().note_keys(title, content, metadata)
        found = vault_of(metadata)
        if found is None:
            return keys
        vault, path = found
        segments = _segments(path)
        if not segments:
            return keys
        owned: list[tuple[str, list[str]]] = [("", segments)]
        folder = _folder_note(segments[-1])
        if folder is not None and len(segments) > 1:
            owned.append((f"+{folder}", segments[:-1]))
        project = _project(segments)
        scopes = (None,) if project is None else (None, project)
        values: set[str] = set()
        for appendix, parts in owned:
            values.add(vault_key(vault, f"path{appendix}", fold("/".join(parts))))
            for depth in range(1, min(len(parts), _MAX_DEPTH) + 1):
                suffix = fold("/".join(parts[-depth:]))
                values.update(vault_key(vault, f"suffix{appendix}", suffix, s) for s in scopes)
        names = [("title", title)] + [("alias", a) for a in self.aliases(content, metadata)]
        for rule, name in names:
            if fold(name):
                values.update(vault_key(vault, rule, fold(name), s) for s in scopes)
        keys.update(NoteKey("vault", value) for value in values if _indexable(value))
        return keys

    def vault_reference(
        self, ref: WikiRef, source_metadata: Mapping[str, Any]
    ) -> tuple[WikiRef, list[Candidate]] | None:
        """The reference as the vault's flavour reads it and its candidates in order;
        None when the source is not a vault note (today's rules apply)."""
        found = vault_of(source_metadata)
        if found is None:
            return None
        vault, source_path = found
        if source_metadata.get("flavour") == "dendron":
            ref = _dendron(ref)
        target = ref.target
        if not _segments(target):
            return ref, []
        candidates: list[Candidate] = []
        if target.startswith(("/", "\\")):
            joined = _segments(target)
        else:
            folder = "/".join(_segments(source_path)[:-1])
            joined = _segments(f"{folder}/{target}")
        own = _project(_segments(source_path))
        scopes = (None,) if own is None else (own, None)
        if joined:
            key = fold("/".join(joined))
            for appendix in _APPENDICES:
                candidates.append(Candidate("path", vault_key(vault, "path" + appendix, key)))
        suffix = _unclimbed(target)
        if suffix:
            key = fold("/".join(suffix))
            for appendix in _APPENDICES:
                candidates.extend(
                    Candidate("suffix", vault_key(vault, "suffix" + appendix, key, scope))
                    for scope in scopes
                )
        name = fold(target)
        for rule in ("title", "alias"):
            candidates.extend(Candidate(rule, vault_key(vault, rule, name, s)) for s in scopes)
        return ref, [c for c in dict.fromkeys(candidates) if _indexable(c.key)]


def _dendron(ref: WikiRef) -> WikiRef:
    """A Dendron reference read the Dendron way: ``[[label|target#heading]]``, with any
    ``dendron://vault/`` prefix dropped."""
    if ref.label is not None:
        # wiki.py split the target part off before "|": here that part is the label,
        # and the part after "|" is the target with its heading.
        target, has_heading, heading = ref.label.partition("#")
        label = ref.target if ref.heading is None else f"{ref.target}#{ref.heading}"
        ref = replace(
            ref,
            target=target.strip(),
            heading=(heading.strip() or None) if has_heading else None,
            label=label,
            block=None,
        ).with_anchor()
    if ref.target.lower().startswith(_DENDRON_PREFIX):
        rest = ref.target[len(_DENDRON_PREFIX) :]
        _, _, path = rest.partition("/")
        ref = replace(ref, target=path.strip() or ref.target)
    return ref
