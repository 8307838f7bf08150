"""How a wiki reference names a note: the keys on both sides, and which match wins.

This module is the one seam of wiki-link resolution. A note is reachable by *keys*, each
of one kind:

* ``title``: its title;
* ``alias``: each of its aliases, from the YAML front matter of its content (``aliases``,
  or Obsidian's older ``alias``; a list or one string) and from ``metadata.aliases``;
* ``path``: its path, ``metadata.path``: where the note lives in a vault or a folder
  tree, ``/``-separated, relative to that root (``projects/alpha/plan.md``). Notes
  imported from files carry one; notes made through the API need not.

A reference ``[[target]]`` has one key, computed from its target (and, for ``./`` and
``../`` targets, the path of the note it is in). Keys are *folded* (:func:`fold`):
Unicode NFC, case-folded, runs of white space as one space, ``\\`` as ``/``, and a
trailing ``.md`` dropped, so ``[[Plan]]``, ``[[plan.md]]`` and ``[[ PLAN ]]`` are one key;
folding is done here, in Python, never by the database's ``lower()``, whose result
depends on the database's locale.

When several notes have the key, the first of these wins (:data:`PRECEDENCE`): a live
note before a soft-deleted one; for a key with a ``/`` (a path), a path match, then a
title, then an alias; for any other key, a title, then an alias, then a path; among
equals, the oldest note (then the smallest id), so an answer never changes because of an
unrelated edit. A reference to a note in the trash stays resolved to it (lists leave the
note out), so restoring the note brings its links back, while a live note taking its
title takes its references.

These are the rules for notes outside vaults. A reference written in a vault note
follows the vault rules instead (path from the source's folder, then path suffix, then
title, then alias, only among the notes of its vault):
:class:`~fortemi.graph.links.vault.VaultKeyRules`, the :class:`KeyRules` subclass the
indexer uses by default.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fortemi.graph.links.wiki import WikiRef, front_matter

__all__ = ["PRECEDENCE", "KeyRules", "NoteKey", "fold", "path_key"]

_SPACE = re.compile(r"\s+")
# Aliases past this many (or longer than a title may be) are not keys.
_MAX_ALIASES = 100
_MAX_KEY = 500

PRECEDENCE = ("live", "path (for a key with a /)", "title", "alias", "path", "oldest note")
"""The order in which candidate notes win, as documented above (the SQL encodes it)."""


def fold(text: str) -> str:
    """The folded form keys are compared in."""
    folded = _SPACE.sub(" ", unicodedata.normalize("NFC", text).replace("\\", "/")).strip()
    if folded[-3:].lower() == ".md":
        folded = folded[:-3].rstrip()
    return folded.casefold()


def path_key(path: str, *, relative_to: str | None = None) -> str:
    """The key of a ``/``-separated path: normalised (``a/./b`` and ``a//b`` are ``a/b``),
    without a leading ``/``; ``./`` and ``../`` taken from ``relative_to``'s folder."""
    path = path.replace("\\", "/").strip()
    if relative_to is not None and path.startswith(("./", "../")):
        path = posixpath.join(posixpath.dirname(relative_to.replace("\\", "/")), path)
    path = posixpath.normpath(path).lstrip("/") if "/" in path else path
    return fold("" if path == "." else path)


@dataclass(frozen=True, slots=True)
class NoteKey:
    kind: str  # title | alias | path
    key: str


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


class KeyRules:
    """The keys of notes and references (see the module's docstring)."""

    def note_path(self, metadata: Mapping[str, Any]) -> str | None:
        path = metadata.get("path")
        return path if isinstance(path, str) and path.strip() else None

    def aliases(self, content: str, metadata: Mapping[str, Any]) -> list[str]:
        matter = front_matter(content)
        found = _strings(matter.get("aliases")) + _strings(matter.get("alias"))
        return found + _strings(metadata.get("aliases"))

    def note_keys(self, title: str, content: str, metadata: Mapping[str, Any]) -> set[NoteKey]:
        """Every key a note with this title, content and metadata is reachable by."""
        keys = {NoteKey("title", fold(title))}
        keys.update(
            NoteKey("alias", fold(alias))
            for alias in self.aliases(content, metadata)[:_MAX_ALIASES]
        )
        path = self.note_path(metadata)
        if path is not None:
            keys.add(NoteKey("path", path_key(path)))
        return {key for key in keys if key.key and len(key.key) <= _MAX_KEY}

    def reference_key(self, ref: WikiRef, source_metadata: Mapping[str, Any]) -> str:
        """The key ``ref``, written in a note with ``source_metadata``, looks for."""
        target = ref.target
        if "/" in target or "\\" in target:
            return path_key(target, relative_to=self.note_path(source_metadata))
        return fold(target)

    def reference_keys(
        self, refs: Iterable[WikiRef], source_metadata: Mapping[str, Any]
    ) -> list[str]:
        return [self.reference_key(ref, source_metadata) for ref in refs]
