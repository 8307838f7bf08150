"""The CPU tier: concepts from the note's own words and the memory's vocabulary, with the
embedding model alone (no generation model, no sidecar).

Two sources, one embedding call:

* **existing concepts** whose label (preferred, alternative or hidden) is close to the
  note: cosine(label, note) ≥ ``label_similarity``, or the label is one of the note's own
  candidate phrases. Reusing the vocabulary comes first: it is what makes tags of
  different notes meet.
* **new keyphrases**, KeyBERT-style (:mod:`~fortemi.graph.tagging.keyphrases`): candidate
  phrases ranked by cosine to the note, picked with MMR for diversity, kept above
  ``phrase_similarity``. They become ``candidate`` concepts with the dimension
  :mod:`~fortemi.graph.tagging.dimensions` names from their vectors and head nouns; an
  existing concept that has no dimension yet is given one the same way.
* **the content type**: the note's document type (``["source code", "Python"]``), when the
  caller knows it, as the ``content_type`` concept (:mod:`.content_type`).

The note's vector is the normalised mean of its pieces' vectors (a note longer than the
model's input is read whole, not cut at 256 tokens). Label vectors are cached per tagger:
a vocabulary changes slowly and its labels are short, re-embedding them per note would
dominate the cost. Everything is deterministic for a given note, vocabulary and model.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from fortemi.graph.tagging.dimensions import DimensionClassifier
from fortemi.graph.tagging.keyphrases import candidates, mmr, plain_text
from fortemi.graph.tagging.models import MAX_CONCEPTS, Found, TaggingSettings
from fortemi.graph.vocabulary.models import LabelEntry
from fortemi.inference import InferenceBackend, normalized

__all__ = ["CpuTagger"]

TIER = "cpu"
_PIECE_CHARS = 1000  # about the local model's 256 tokens
_MAX_PIECES = 6
_MAX_CANDIDATES = 100
_CACHE_SIZE = 20_000
_USED_LABEL = 0.6  # the confidence of a concept whose label the note uses verbatim
# The content type is known, not guessed; it is never what the note is mostly about.
_CONTENT_TYPE_CONFIDENCE, _CONTENT_TYPE_RELEVANCE = 0.9, 0.1


class CpuTagger:
    """Proposes a note's concepts with ``backend.embed``; raises only InferenceError."""

    def __init__(self, backend: InferenceBackend, settings: TaggingSettings) -> None:
        self._backend = backend
        self._settings = settings
        self._label_vectors: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
        self._dimensions = DimensionClassifier(backend)

    async def propose(
        self,
        title: str,
        content: str,
        labels: Sequence[LabelEntry],
        content_type: tuple[str, ...] | None = None,
    ) -> list[Found]:
        """At most :data:`MAX_CONCEPTS` concepts for the note, best first, each with a
        dimension; ``content_type`` (a path) becomes its ``content_type`` concept."""
        text = plain_text(content)[: self._settings.max_input_chars]
        pieces = _pieces(title, text)
        if not pieces:
            return []
        phrases = [c.phrase for c in candidates(title, text, limit=_MAX_CANDIDATES)]
        label_texts = sorted({entry.label for entry in labels})
        missing = [label for label in label_texts if label not in self._label_vectors]
        vectors = await self._backend.embed([*pieces, *phrases, *missing])
        note = normalized(vectors[: len(pieces)].mean(axis=0, keepdims=True))[0]
        phrase_vectors = vectors[len(pieces) : len(pieces) + len(phrases)]
        known = {label: self._label_vectors[label] for label in label_texts if label not in missing}
        for label in known:
            self._label_vectors.move_to_end(label)  # least recently used goes first
        known.update(zip(missing, vectors[len(pieces) + len(phrases) :], strict=True))
        self._remember(missing, known)

        reused = _reused(labels, known, note, {p.casefold() for p in phrases}, self._settings)
        reused = await self._with_dimensions(reused, known)
        room = MAX_CONCEPTS - (1 if content_type else 0)
        reused = reused[:room]
        # Reused concepts rule out their twins too: tagging a note again, whose concepts are
        # now in the vocabulary, must pick the same ones.
        kept = [_stems(f.key) for f in reused]
        fresh: list[Found] = []
        picked = mmr(
            phrases, phrase_vectors, note, top=len(phrases), floor=self._settings.phrase_similarity
        )
        for ranked in picked:
            if len(reused) + len(fresh) >= room:
                break
            words = _stems(ranked.phrase)
            # "community detection" and "louvain community detection" are one concept to a
            # reader; MMR lowers such a twin's score but cannot rule it out.
            if any(_contains(words, other) or _contains(other, words) for other in kept):
                continue
            kept.append(words)
            score = _unit(ranked.similarity)
            fresh.append(Found((ranked.phrase,), None, score, score, TIER))
        named = await self._dimensions.classify(
            [f.path[-1] for f in fresh],
            np.stack([phrase_vectors[phrases.index(f.path[-1])] for f in fresh])
            if fresh
            else phrase_vectors[:0],
        )
        fresh = [
            Found(f.path, dimension, f.confidence, f.relevance, TIER)
            for f, dimension in zip(fresh, named, strict=True)
        ]
        found = [*reused, *fresh]
        if content_type and not any(f.key == content_type[-1].casefold() for f in found):
            found.append(
                Found(
                    content_type,
                    "content_type",
                    _CONTENT_TYPE_CONFIDENCE,
                    _CONTENT_TYPE_RELEVANCE,
                    TIER,
                )
            )
        if not found:
            return []
        top = max(found, key=lambda f: (f.relevance, f.confidence))
        return [
            Found(f.path, f.dimension, f.confidence, f.relevance, f.tier, f is top) for f in found
        ]

    async def _with_dimensions(
        self, reused: list[Found], vectors: dict[str, NDArray[np.float32]]
    ) -> list[Found]:
        """``reused`` with a dimension named for the concepts that have none yet (by the
        label matched, whose vector is at hand)."""
        blank = [f for f in reused if f.dimension is None and f.path[-1] in vectors]
        if not blank:
            return reused
        named = dict(
            zip(
                (f.key for f in blank),
                await self._dimensions.classify(
                    [f.path[-1] for f in blank], np.stack([vectors[f.path[-1]] for f in blank])
                ),
                strict=True,
            )
        )
        return [
            Found(f.path, named.get(f.key, f.dimension), f.confidence, f.relevance, f.tier)
            if f.dimension is None
            else f
            for f in reused
        ]

    def _remember(self, labels: list[str], vectors: dict[str, NDArray[np.float32]]) -> None:
        for label in labels:
            self._label_vectors[label] = vectors[label]
        while len(self._label_vectors) > _CACHE_SIZE:
            self._label_vectors.popitem(last=False)


def _reused(
    labels: Sequence[LabelEntry],
    vectors: dict[str, NDArray[np.float32]],
    note: NDArray[np.float32],
    phrases: set[str],
    settings: TaggingSettings,
) -> list[Found]:
    """Existing concepts whose label is near the note or is one of its phrases: one
    finding per concept, by its best label, best first."""
    best: dict[object, tuple[float, LabelEntry]] = {}
    for entry in labels:
        similarity = float(vectors[entry.label] @ note)
        used = entry.label.casefold() in phrases
        if similarity < settings.label_similarity and not used:
            continue
        held = best.get(entry.concept_id)
        if held is None or similarity > held[0]:
            best[entry.concept_id] = (similarity, entry)
    ranked = sorted(best.values(), key=lambda pair: (-pair[0], pair[1].label))
    return [
        Found(
            entry.path or (entry.label,),
            entry.dimension,
            # A label the note itself uses is sure even when its vector is far off.
            max(_unit(similarity), _USED_LABEL if entry.label.casefold() in phrases else 0.0),
            _unit(similarity),
            TIER,
        )
        for similarity, entry in ranked[:MAX_CONCEPTS]
    ]


def _pieces(title: str, text: str) -> list[str]:
    """The note as model-sized pieces, the title heading the first."""
    body = " ".join(text.split())
    head = title.strip()
    if not body:
        return [head] if head else []
    chunks = [body[i : i + _PIECE_CHARS] for i in range(0, len(body), _PIECE_CHARS)]
    chunks = chunks[:_MAX_PIECES]
    if head:
        chunks[0] = f"{head}. {chunks[0]}"
    return chunks


def _stems(phrase: str) -> list[str]:
    """The phrase's words folded, a plural "s" dropped ("neighbours" ~ "neighbour")."""
    return [w[:-1] if len(w) > 3 and w.endswith("s") else w for w in phrase.casefold().split()]


def _contains(words: list[str], part: list[str]) -> bool:
    """Whether ``part`` occurs in ``words`` as a contiguous run."""
    size = len(part)
    return any(words[i : i + size] == part for i in range(len(words) - size + 1))


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)
