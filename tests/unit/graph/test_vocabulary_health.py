"""The vocabulary health check, on hand-built vocabularies."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest

from fortemi.graph.vocabulary.health import assess, fold
from fortemi.graph.vocabulary.models import Concept, ConceptLabel, ConceptRelation

AT = datetime(2026, 1, 1, tzinfo=UTC)
SCHEME = uuid4()


class Vocabulary:
    def __init__(self) -> None:
        self.concepts: list[Concept] = []
        self.labels: dict[UUID, list[ConceptLabel]] = {}
        self.relations: list[ConceptRelation] = []
        self.notes: dict[UUID, int] = {}

    def add(
        self,
        pref: str,
        *alts: str,
        broader: tuple[UUID, ...] = (),
        dimension: str | None = None,
        scheme: UUID = SCHEME,
        status: str = "candidate",
        notes: int = 1,
    ) -> UUID:
        cid = uuid4()
        self.concepts.append(
            Concept(cid, scheme, None, None, status, dimension, None, None, AT, AT, None)
        )
        self.labels[cid] = [ConceptLabel(cid, "pref", "", pref)] + [
            ConceptLabel(cid, "alt", "", alt) for alt in alts
        ]
        self.relations += [ConceptRelation(cid, b, "broader", None, None, AT) for b in broader]
        self.notes[cid] = notes
        return cid

    def kinds(self) -> list[tuple[str, tuple[str, ...]]]:
        report = assess(self.concepts, self.labels, self.relations, self.notes)
        return [(issue.kind, issue.labels) for issue in report.issues]


@pytest.mark.parametrize(
    ("label", "folded"),
    [
        ("Neural-Nets", "neuralnet"),
        ("neural net", "neuralnet"),
        ("Categories", "category"),
        ("boxes", "box"),
        ("analysis", "analysis"),
        ("glass", "glass"),
        ("To-Read", "toread"),
        ("status", "status"),
    ],
)
def test_fold_ignores_case_punctuation_spacing_and_a_plural_ending(label: str, folded: str) -> None:
    assert fold(label) == folded


def test_a_fifth_level_is_flagged_as_over_nesting_and_a_fourth_is_not() -> None:
    v = Vocabulary()
    a = v.add("a")
    b = v.add("b", broader=(a,))
    c = v.add("c", broader=(b,))
    d = v.add("d", broader=(c,))
    v.add("e", broader=(d,))
    assert [k for k in v.kinds() if k[0] == "over_nesting"] == [("over_nesting", ("e",))]


def test_meta_tags_are_found_in_any_label() -> None:
    v = Vocabulary()
    v.add("Important")
    v.add("Reading list", "to-read")
    v.add("News")
    v.add("Literature review")
    assert [k for k in v.kinds() if k[0] == "meta_tag"] == [
        ("meta_tag", ("Important",)),
        ("meta_tag", ("Reading list",)),
    ]


def test_orphans_have_neither_notes_nor_relations() -> None:
    v = Vocabulary()
    top = v.add("top", notes=0)
    v.add("child", broader=(top,), notes=0)
    v.add("alone", notes=0)
    v.add("used")
    v.add("retired", notes=0, status="deprecated")
    assert [k for k in v.kinds() if k[0] == "orphan"] == [("orphan", ("alone",))]


def test_synonym_sprawl_groups_concepts_whose_labels_read_the_same() -> None:
    v = Vocabulary()
    v.add("Neural networks")
    v.add("neural-network")
    v.add("NN", "Neural Network")
    v.add("Networks")
    sprawl = [k for k in v.kinds() if k[0] == "synonym_sprawl"]
    assert sprawl == [("synonym_sprawl", ("NN", "Neural networks", "neural-network"))]


def test_mixed_hierarchies_have_broader_concepts_across_dimensions_or_schemes() -> None:
    v = Vocabulary()
    topic = v.add("ml", dimension="topic")
    method = v.add("statistics", dimension="methodology")
    other_topic = v.add("maths", dimension="topic")
    elsewhere = v.add("elsewhere", dimension="topic", scheme=uuid4())
    v.add("regression", broader=(topic, method))
    v.add("calculus", broader=(topic, other_topic))
    v.add("mixed scheme", broader=(topic, elsewhere))
    assert [k for k in v.kinds() if k[0] == "mixed_hierarchy"] == [
        ("mixed_hierarchy", ("mixed scheme", "ml", "elsewhere")),
        ("mixed_hierarchy", ("regression", "ml", "statistics")),
    ]
