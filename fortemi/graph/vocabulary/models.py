"""Value objects of the SKOS vocabulary: schemes, concepts, labels, relations, collections,
and the concepts attached to notes.

The limits of the model live here, once: a path tag has at most :data:`MAX_DEPTH`
components, a concept at most :data:`MAX_BROADER` broader concepts, and a candidate
concept becomes ``controlled`` once :data:`LITERARY_WARRANT` live notes carry it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final
from uuid import UUID

__all__ = [
    "DIMENSIONS",
    "LABEL_KINDS",
    "LITERARY_WARRANT",
    "MAX_BROADER",
    "MAX_DEPTH",
    "MAX_LABEL_CHARS",
    "SOURCES",
    "STATUSES",
    "Collection",
    "Concept",
    "ConceptLabel",
    "ConceptNote",
    "ConceptProposal",
    "ConceptRelation",
    "ConceptScheme",
    "Cooccurrence",
    "LabelEntry",
    "NoteConcept",
]

DIMENSIONS: Final = (
    "domain",
    "topic",
    "methodology",
    "application",
    "technique",
    "content_type",
)
STATUSES: Final = ("candidate", "controlled", "deprecated")
LABEL_KINDS: Final = ("pref", "alt", "hidden")
# Who attached a concept to a note. ``ai_auto`` rows are the tagging job's and are replaced
# wholesale by its next run; the others are decisions a person or an integration made.
SOURCES: Final = ("user", "api", "ai_auto", "import")

MAX_DEPTH: Final = 5  # levels from a top concept down, the top being level 1
MAX_BROADER: Final = 3  # broader concepts of one concept (poly-hierarchy, bounded)
LITERARY_WARRANT: Final = 3  # live notes a candidate needs to become controlled
MAX_LABEL_CHARS: Final = 200  # concept_label.label's CHECK


@dataclass(frozen=True, slots=True)
class ConceptProposal:
    """A concept to attach to a note, named by its path of labels from the top.

    ``("ml", "transformers")`` is the path tag ``ml/transformers``: the leaf
    (``transformers``) is attached, its ancestors are wired as its broader chain. With
    ``concept_id`` the proposal names an existing concept instead (``path`` is ignored).
    """

    path: tuple[str, ...]
    dimension: str | None
    confidence: float
    relevance: float
    primary: bool = False
    concept_id: UUID | None = None


@dataclass(frozen=True, slots=True)
class LabelEntry:
    """One label of a non-deprecated concept, as the tagging tiers match text against."""

    concept_id: UUID
    label: str
    kind: str  # pref | alt | hidden
    dimension: str | None
    path: tuple[str, ...]  # pref labels from the top down to this concept (first chain)


@dataclass(frozen=True, slots=True)
class NoteConcept:
    """A concept attached to a note (never part of the note's versions)."""

    concept_id: UUID
    label: str  # the concept's preferred label
    dimension: str | None
    source: str
    confidence: float
    relevance: float
    primary: bool
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ConceptScheme:
    id: UUID
    uri: str | None
    title: str
    description: str | None
    is_default: bool
    created_at: datetime
    created_by: str | None


@dataclass(frozen=True, slots=True)
class Concept:
    id: UUID
    scheme_id: UUID
    uri: str | None
    notation: str | None
    status: str
    dimension: str | None
    definition: str | None
    scope_note: str | None
    created_at: datetime
    updated_at: datetime
    created_by: str | None


@dataclass(frozen=True, slots=True)
class ConceptLabel:
    concept_id: UUID
    kind: str
    lang: str
    label: str


@dataclass(frozen=True, slots=True)
class ConceptNote:
    """A definition or scope note in a language (the neutral one is on the concept)."""

    concept_id: UUID
    kind: str  # definition | scope_note
    lang: str
    text: str


@dataclass(frozen=True, slots=True)
class ConceptRelation:
    """``broader`` (source is narrower than target) or ``related`` (one of its two rows)."""

    source_id: UUID
    target_id: UUID
    kind: str
    confidence: float | None
    created_by: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Collection:
    id: UUID
    scheme_id: UUID
    uri: str | None
    label: str
    ordered: bool
    created_at: datetime
    members: tuple[UUID, ...] = ()  # in position order


@dataclass(frozen=True, slots=True)
class Cooccurrence:
    """Over the memory's live notes that carry any concept: how many there are, how many
    carry each concept, and each pair (keyed smaller id first)."""

    notes: int
    singles: dict[UUID, int]
    pairs: dict[tuple[UUID, UUID], int]

    def together(self, a: UUID, b: UUID) -> int:
        return self.pairs.get((a, b) if a < b else (b, a), 0)
