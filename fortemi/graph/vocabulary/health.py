"""Vocabulary health: the anti-patterns a tag vocabulary drifts into, found from its
concepts, labels, relations and note counts (a pure function, so it is tested alone).

* ``over_nesting``: a concept more than 4 levels below the top. Five is the hard limit;
  the fifth level is allowed but flagged, since hierarchies that deep are rarely browsed
  and usually mean a facet (a dimension) was folded into the tree.
* ``meta_tag``: a label that says something about the reader's workflow, not the subject
  ("important", "todo", "misc", "to-read"...): better as a note attribute or plain tag.
* ``orphan``: a concept no live note carries and no relation touches.
* ``synonym_sprawl``: concepts whose labels collide once case, punctuation, spacing and a
  plural ending are ignored ("Neural-Nets", "neural nets", "neural net"): one concept with
  alternative labels is what SKOS means.
* ``mixed_hierarchy``: a concept whose broader concepts sit in different dimensions or
  schemes (a poly-hierarchy across facets, which filters and browsing read badly).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

from fortemi.graph.vocabulary.models import Concept, ConceptLabel, ConceptRelation

__all__ = ["META_TAGS", "HealthIssue", "HealthReport", "assess", "fold"]

NESTING_FLAG = 4  # levels; a concept below this one is flagged

# Workflow words, folded (see :func:`fold`).
META_TAGS = frozenset(
    fold_word
    for fold_word in (
        "important", "todo", "todos", "misc", "miscellaneous", "toread", "readlater", "later",
        "starred", "favorite", "favourite", "fav", "temp", "tmp", "other", "stuff", "general",
        "untitled", "inbox", "wip", "done", "draft", "toreview", "uncategorized",
        "uncategorised", "unsorted", "urgent", "followup", "asap", "someday",
    )
)  # fmt: skip

_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)


def fold(label: str) -> str:
    """``label`` without case, punctuation and spacing, and its last word's plural ending
    (-ies → -y, -ses/-xes/-ches/-shes → drop -es, else a final -s but not -ss)."""
    words = [w for w in _NOT_WORD.split(label.casefold()) if w]
    if not words:
        return ""
    last = words[-1]
    if len(last) > 4 and last.endswith("ies"):
        last = last[:-3] + "y"
    elif len(last) > 4 and last.endswith(("ses", "xes", "ches", "shes")):
        last = last[:-2]
    elif len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "us", "is")):
        last = last[:-1]
    return "".join([*words[:-1], last])


@dataclass(frozen=True, slots=True)
class HealthIssue:
    kind: str  # over_nesting | meta_tag | orphan | synonym_sprawl | mixed_hierarchy
    concept_ids: tuple[UUID, ...]
    labels: tuple[str, ...]  # the pref labels of those concepts, same order
    detail: str


@dataclass(frozen=True, slots=True)
class HealthReport:
    concepts: int
    issues: tuple[HealthIssue, ...]

    def count(self, kind: str) -> int:
        return sum(1 for issue in self.issues if issue.kind == kind)


def _levels(ids: Iterable[UUID], broader: Mapping[UUID, Sequence[UUID]]) -> dict[UUID, int]:
    """Each concept's level: 1 at the top, else 1 + its deepest broader concept's (a cycle,
    which the writes refuse, counts as the top instead of looping)."""
    levels: dict[UUID, int] = {}

    def level(concept: UUID, seen: frozenset[UUID]) -> int:
        if concept in levels:
            return levels[concept]
        parents = [p for p in broader.get(concept, ()) if p not in seen]
        found = 1 + max((level(p, seen | {concept}) for p in parents), default=0)
        levels[concept] = found
        return found

    for concept in ids:
        level(concept, frozenset())
    return levels


def assess(
    concepts: Sequence[Concept],
    labels: Mapping[UUID, Sequence[ConceptLabel]],
    relations: Sequence[ConceptRelation],
    note_counts: Mapping[UUID, int],
) -> HealthReport:
    """The health report of a vocabulary. Deprecated concepts are left out: they are
    already retired."""
    live = {c.id: c for c in concepts if c.status != "deprecated"}
    pref = {cid: _pref(labels.get(cid, ()), cid) for cid in live}
    broader: dict[UUID, list[UUID]] = defaultdict(list)
    touched: set[UUID] = set()
    for r in relations:
        touched.update((r.source_id, r.target_id))
        if r.kind == "broader":
            broader[r.source_id].append(r.target_id)
    issues: list[HealthIssue] = []

    def issue(kind: str, ids: Sequence[UUID], detail: str) -> None:
        issues.append(HealthIssue(kind, tuple(ids), tuple(pref[i] for i in ids), detail))

    for cid, level in sorted(_levels(live, broader).items(), key=lambda kv: (-kv[1], pref[kv[0]])):
        if level > NESTING_FLAG and cid in live:
            issue("over_nesting", [cid], f"{level} levels deep; keep hierarchies to {NESTING_FLAG}")
    for cid in sorted(live, key=pref.__getitem__):
        meta = sorted({lb.label for lb in labels.get(cid, ()) if fold(lb.label) in META_TAGS})
        if meta:
            issue("meta_tag", [cid], f"{', '.join(meta)} describes a workflow, not a subject")
    for cid in sorted(live, key=pref.__getitem__):
        if not note_counts.get(cid) and cid not in touched:
            issue("orphan", [cid], "no note carries it and no relation touches it")
    groups: dict[str, set[UUID]] = defaultdict(set)
    for cid in live:
        for lb in labels.get(cid, ()):
            key = fold(lb.label)
            if key:
                groups[key].add(cid)
    seen_groups: set[frozenset[UUID]] = set()
    for key, members in sorted(groups.items()):
        group = frozenset(members)
        if len(group) > 1 and group not in seen_groups:
            seen_groups.add(group)
            ids = sorted(group, key=lambda i: (pref[i], str(i)))
            issue("synonym_sprawl", ids, f"labels that read the same ({key!r}); merge them")
    for cid in sorted(live, key=pref.__getitem__):
        parents = [live[p] for p in broader.get(cid, ()) if p in live]
        dimensions = {p.dimension for p in parents if p.dimension is not None}
        schemes = {p.scheme_id for p in parents}
        if len(dimensions) > 1 or len(schemes) > 1:
            what = "dimensions" if len(dimensions) > 1 else "schemes"
            issue(
                "mixed_hierarchy",
                [cid, *(p.id for p in parents)],
                f"its broader concepts sit in different {what}",
            )
    return HealthReport(concepts=len(live), issues=tuple(issues))


def _pref(labels: Sequence[ConceptLabel], concept_id: UUID) -> str:
    prefs = sorted(
        (lb for lb in labels if lb.kind == "pref"),
        key=lambda lb: (lb.lang != "", lb.lang != "en", lb.lang),
    )
    return prefs[0].label if prefs else str(concept_id)
