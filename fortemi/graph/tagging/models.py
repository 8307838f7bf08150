"""What the tagging tiers find, how it travels from one tier to the next, and the knobs.

A tier's finding is a list of :class:`Found` concepts. An escalated job carries the
concepts of the tiers below it in ``payload["escalation"]["carried"]`` (see
:meth:`Found.as_json` and :func:`carried`), so the next tier keeps them and adds its own:
what a CPU-only tier found is never thrown away by a model that found little.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from fortemi.platform.settings import Settings

__all__ = [
    "DIMENSIONS",
    "MAX_CONCEPTS",
    "MIN_CONCEPTS",
    "Found",
    "TaggingSettings",
    "carried",
    "merged",
]

DIMENSIONS: Final = ("domain", "topic", "methodology", "application", "technique", "content_type")
MIN_CONCEPTS: Final = 8  # what the generation tiers are asked for ...
MAX_CONCEPTS: Final = 15  # ... and the most a note gets from tagging
MAX_PATH: Final = 5  # components of a path tag (the vocabulary's depth limit)


@dataclass(frozen=True, slots=True)
class Found:
    """A concept a tier proposes: its path of labels from the top, its dimension (None:
    not known), how sure the tier is (``confidence``) and how
    central the concept is to the note (``relevance``), both 0..1, and which tier."""

    path: tuple[str, ...]
    dimension: str | None
    confidence: float
    relevance: float
    tier: str
    primary: bool = False

    @property
    def key(self) -> str:
        """The leaf label, folded: two findings with the same key are one concept."""
        return self.path[-1].casefold()

    def as_json(self) -> dict[str, Any]:
        return {
            "path": list(self.path),
            "dimension": self.dimension,
            "confidence": round(self.confidence, 4),
            "relevance": round(self.relevance, 4),
            "tier": self.tier,
            "primary": self.primary,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Found | None:
        """The finding in ``value``, or None when it is not one (a payload is data)."""
        path = value.get("path")
        dimension = value.get("dimension")
        try:
            confidence = float(value.get("confidence", 0.0))
            relevance = float(value.get("relevance", 0.0))
        except (TypeError, ValueError):
            return None
        if (
            not isinstance(path, list)
            or not 1 <= len(path) <= MAX_PATH
            or not all(isinstance(part, str) and part.strip() for part in path)
            or (dimension is not None and dimension not in DIMENSIONS)
        ):
            return None
        return cls(
            path=tuple(part.strip() for part in path),
            dimension=dimension,
            confidence=min(max(confidence, 0.0), 1.0),
            relevance=min(max(relevance, 0.0), 1.0),
            tier=str(value.get("tier", "")),
            primary=bool(value.get("primary", False)),
        )


def carried(payload: Mapping[str, Any]) -> tuple[str | None, list[Found]]:
    """The tier that escalated to this job and the concepts it carried (none for a
    first-tier job; malformed entries are skipped)."""
    escalation = payload.get("escalation")
    if not isinstance(escalation, Mapping):
        return None, []
    carry = escalation.get("carried")
    if not isinstance(carry, Mapping):
        return str(escalation.get("fromTier") or "") or None, []
    concepts = carry.get("concepts")
    found = [
        item
        for raw in (concepts if isinstance(concepts, list) else [])
        if isinstance(raw, Mapping) and (item := Found.from_json(raw)) is not None
    ]
    return str(carry.get("tier") or escalation.get("fromTier") or "") or None, found


def merged(earlier: Iterable[Found], later: Sequence[Found], *, limit: int) -> list[Found]:
    """``earlier`` and ``later`` as one list of at most ``limit`` concepts.

    A concept both found is taken from ``later`` (a higher tier knows its dimension and
    place in a hierarchy better) with the higher confidence of the two. The most
    confident are kept; exactly one is primary: the later tier's pick when it made one,
    else the most relevant.
    """
    by_key: dict[str, Found] = {}
    for item in earlier:
        by_key.setdefault(item.key, item)
    for item in later:
        before = by_key.get(item.key)
        if before is not None and before.confidence > item.confidence:
            item = Found(
                item.path,
                item.dimension or before.dimension,
                before.confidence,
                item.relevance,
                item.tier,
                item.primary,
            )
        by_key[item.key] = item
    kept = sorted(by_key.values(), key=lambda f: (-f.confidence, -f.relevance, f.key))[:limit]
    if not kept:
        return []
    primaries = [f for f in kept if f.primary and f.tier == (later[0].tier if later else "")]
    chosen = primaries[0] if primaries else max(kept, key=lambda f: (f.relevance, f.confidence))
    return [
        Found(f.path, f.dimension, f.confidence, f.relevance, f.tier, f is chosen) for f in kept
    ]


@dataclass(frozen=True, slots=True)
class TaggingSettings:
    """The tiers' knobs (``FORTEMI_TAGGING_*`` settings).

    ``label_similarity``: the cosine between an existing concept label and the note above
    which the CPU tier reuses the concept (all-MiniLM-L6-v2 puts a label that names what a
    note is about at 0.35-0.7, a tangential one near 0.25, an unrelated one near 0.1).
    ``phrase_similarity``: the
    least cosine a new keyphrase needs. ``cpu_escalate_below`` / ``fast_escalate_below``:
    a tier that finds fewer concepts hands the job one tier up (5 and 3, the issue's
    thresholds). ``max_input_chars``: how much of a note the tiers read.
    ``related_floor``: the least confidence of an inferred related edge.
    """

    label_similarity: float = 0.35
    phrase_similarity: float = 0.3
    cpu_escalate_below: int = 5
    fast_escalate_below: int = 3
    max_input_chars: int = 6000
    related_floor: float = 0.2

    @classmethod
    def from_settings(cls, settings: Settings) -> TaggingSettings:
        return cls(
            label_similarity=settings.tagging_label_similarity,
            phrase_similarity=settings.tagging_phrase_similarity,
            related_floor=settings.tagging_related_floor,
        )
