"""SKOS Turtle import and export: a real published vocabulary round-trips through the model,
and a bad file writes nothing."""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from rdflib import RDF, Graph, Literal
from rdflib.compare import isomorphic
from rdflib.namespace import OWL, SKOS

from fortemi.graph.vocabulary import VocabularyService
from fortemi.graph.vocabulary.skos import FMI, VocabularySnapshot
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput, Conflict
from fortemi.platform.memories import MemoryService

_others = itertools.count()
TADIRAH = Path(__file__).resolve().parents[2] / "data" / "skos" / "tadirah_2.0.3.ttl"

# The statements the model holds, by predicate (rdf:type only for SKOS's classes).
HELD = {
    SKOS.prefLabel,
    SKOS.altLabel,
    SKOS.hiddenLabel,
    SKOS.definition,
    SKOS.scopeNote,
    SKOS.notation,
    SKOS.broader,
    SKOS.narrower,
    SKOS.related,
    SKOS.inScheme,
    SKOS.topConceptOf,
    SKOS.hasTopConcept,
    SKOS.member,
    OWL.deprecated,
    FMI.dimension,
}
SKOS_TYPES = {SKOS.Concept, SKOS.ConceptScheme, SKOS.Collection, SKOS.OrderedCollection}


def held(graph: Graph) -> Graph:
    kept = Graph()
    for s, p, o in graph:
        if p in HELD or (p == RDF.type and o in SKOS_TYPES):
            kept.add((s, p, o))
    return kept


def model(snapshot: VocabularySnapshot) -> dict[str, Any]:
    """The snapshot without ids and times: everything keyed by URI."""
    uri = {c.id: c.uri for c in snapshot.concepts}
    scheme_uri = {s.id: s.uri for s in snapshot.schemes}
    return {
        "schemes": sorted((s.uri or "", s.title, s.description or "") for s in snapshot.schemes),
        "concepts": sorted(
            (
                str(c.uri),
                str(scheme_uri[c.scheme_id]),
                c.notation,
                c.status,
                c.dimension,
                c.definition,
                c.scope_note,
            )
            for c in snapshot.concepts
        ),
        "labels": sorted(
            (str(uri[x.concept_id]), x.kind, x.lang, x.label) for x in snapshot.labels
        ),
        "notes": sorted((str(uri[n.concept_id]), n.kind, n.lang, n.text) for n in snapshot.notes),
        "relations": sorted(
            (str(uri[r.source_id]), r.kind, str(uri[r.target_id])) for r in snapshot.relations
        ),
        "collections": sorted(
            (str(c.uri), c.label, c.ordered, tuple(str(uri[m]) for m in c.members))
            for c in snapshot.collections
        ),
    }


@pytest.fixture
async def other_memory(memory_service: MemoryService) -> AsyncIterator[str]:
    name = f"t{os.getpid()}_other{next(_others)}"
    await memory_service.create(name, created_by="test")
    yield name
    await memory_service.delete(name, confirm=name)


async def test_a_published_vocabulary_round_trips_through_import_and_export(
    vocabulary: VocabularyService, memory: str, other_memory: str
) -> None:
    original = TADIRAH.read_text(encoding="utf-8")
    first = await vocabulary.skos.import_turtle(memory, original, actor="test")
    assert (first.concepts, len(first.schemes)) == (168, 1)
    exported = await vocabulary.skos.export_turtle(memory)

    await vocabulary.skos.import_turtle(other_memory, exported, actor="test")

    one = await vocabulary.skos.snapshot(memory)
    two = await vocabulary.skos.snapshot(other_memory)
    assert model(one) == model(two)
    assert len(model(one)["labels"]) == 551
    # Every SKOS statement of the original that the model holds comes back out, and
    # nothing else does (the scheme's title is dc:title there, dct:title here: not held).
    source = held(Graph().parse(data=original, format="turtle"))
    again = held(Graph().parse(data=exported, format="turtle"))
    assert isomorphic(source, again)


HAND_MADE = """
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix dct: <http://purl.org/dc/terms/> .
@prefix fmi: <urn:fortemi:vocabulary:> .
@prefix ex: <https://example.org/v/> .

ex:scheme a skos:ConceptScheme ; dct:title "Examples" ; dct:description "For tests" .
ex:ml a skos:Concept ; skos:inScheme ex:scheme ; skos:prefLabel "ML"@en, "AA"@pt ;
  skos:hiddenLabel "machine-learning"@en ; skos:notation "006.31" ;
  skos:definition "Learning from data" , "Learning from data, in English"@en ;
  fmi:dimension "domain" .
ex:nlp a skos:Concept ; skos:inScheme ex:scheme ; skos:prefLabel "NLP" ; skos:broader ex:ml ;
  skos:related ex:linguistics ; skos:scopeNote "Text only"@en .
ex:linguistics a skos:Concept ; skos:inScheme ex:scheme ; skos:prefLabel "Linguistics" ;
  skos:altLabel "Language science" .
ex:old a skos:Concept ; skos:inScheme ex:scheme ; skos:prefLabel "Old" ; owl:deprecated true .
ex:steps a skos:OrderedCollection ; skos:prefLabel "Steps" ;
  skos:memberList ( ex:nlp ex:ml ex:linguistics ) .
ex:bag a skos:Collection ; skos:prefLabel "Bag" ; skos:member ex:old, ex:ml .
"""


async def test_everything_the_model_holds_round_trips(
    vocabulary: VocabularyService, memory: str, other_memory: str
) -> None:
    await vocabulary.skos.import_turtle(memory, HAND_MADE, actor="test")
    one = await vocabulary.skos.snapshot(memory)
    exported = await vocabulary.skos.export_turtle(memory)
    await vocabulary.skos.import_turtle(other_memory, exported, actor="test")
    two = await vocabulary.skos.snapshot(other_memory)

    assert model(one) == model(two)
    shape = model(one)
    assert (
        "https://example.org/v/old",
        "https://example.org/v/scheme",
        None,
        "deprecated",
        None,
        None,
        None,
    ) in shape["concepts"]
    assert (
        "https://example.org/v/steps",
        "Steps",
        True,
        (
            "https://example.org/v/nlp",
            "https://example.org/v/ml",
            "https://example.org/v/linguistics",
        ),
    ) in shape["collections"]
    assert ("https://example.org/v/nlp", "related", "https://example.org/v/linguistics") in shape[
        "relations"
    ]
    assert ("https://example.org/v/ml", "definition", "en", "Learning from data, in English") in (
        shape["notes"]
    )
    graph = Graph().parse(data=exported, format="turtle")
    assert (None, SKOS.hiddenLabel, Literal("machine-learning", lang="en")) in graph
    assert isomorphic(
        held(Graph().parse(data=HAND_MADE, format="turtle")) + _implied(), held(graph)
    )


def _implied() -> Graph:
    """What the export states that the hand-made file leaves implicit: narrower for each
    broader, related both ways, top concepts, members of the ordered collection, schemes
    of collections."""
    ex = "https://example.org/v/"
    text = f"""
    @prefix skos: <http://www.w3.org/2004/02/skos/core#> .
    <{ex}ml> skos:narrower <{ex}nlp> ; skos:topConceptOf <{ex}scheme> .
    <{ex}linguistics> skos:related <{ex}nlp> ; skos:topConceptOf <{ex}scheme> .
    <{ex}old> skos:topConceptOf <{ex}scheme> .
    <{ex}scheme> skos:hasTopConcept <{ex}ml>, <{ex}linguistics>, <{ex}old> .
    <{ex}steps> skos:member <{ex}nlp>, <{ex}ml>, <{ex}linguistics> ;
        skos:inScheme <{ex}scheme> .
    <{ex}bag> skos:inScheme <{ex}scheme> .
    """
    return Graph().parse(data=text, format="turtle")


async def _concept_rows(db: Database, memory: str) -> int:
    async with db.memory_transaction(memory) as conn:
        count: int = await conn.fetchval("SELECT count(*) FROM concept")
    return count


async def test_bad_turtle_is_bad_input_with_its_line_and_writes_nothing(
    vocabulary: VocabularyService, memory: str, db: Database
) -> None:
    broken = HAND_MADE.replace('skos:prefLabel "NLP" ;', 'skos:prefLabel "NLP" ', 1)
    with pytest.raises(BadUserInput) as caught:
        await vocabulary.skos.import_turtle(memory, broken, actor="test")
    assert caught.value.extensions["line"] == 13
    assert "line 13" in caught.value.message
    assert await _concept_rows(db, memory) == 0


async def test_a_file_breaking_the_hierarchy_rules_writes_nothing(
    vocabulary: VocabularyService, memory: str, db: Database
) -> None:
    cyclic = HAND_MADE + "ex:ml skos:broader ex:nlp .\n"
    with pytest.raises(BadUserInput) as caught:
        await vocabulary.skos.import_turtle(memory, cyclic, actor="test")
    assert caught.value.extensions["reason"] == "cycle"
    related_and_broader = HAND_MADE + "ex:nlp skos:related ex:ml .\n"
    with pytest.raises(BadUserInput, match="S27"):
        await vocabulary.skos.import_turtle(memory, related_and_broader, actor="test")
    two_prefs = HAND_MADE + 'ex:old skos:prefLabel "Older" .\n'
    with pytest.raises(BadUserInput, match="S14"):
        await vocabulary.skos.import_turtle(memory, two_prefs, actor="test")
    assert await _concept_rows(db, memory) == 0


async def test_importing_uris_the_memory_holds_is_a_conflict(
    vocabulary: VocabularyService, memory: str, db: Database
) -> None:
    await vocabulary.skos.import_turtle(memory, HAND_MADE, actor="test")
    with pytest.raises(Conflict, match="already holds"):
        await vocabulary.skos.import_turtle(memory, HAND_MADE, actor="test")
    assert await _concept_rows(db, memory) == 4
