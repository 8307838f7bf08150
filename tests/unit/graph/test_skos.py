"""Reading SKOS Turtle into the model, without a database."""

from __future__ import annotations

import pytest

from fortemi.graph.vocabulary.skos import from_turtle, to_turtle
from fortemi.platform.errors import BadUserInput

PREFIXES = """@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix ex: <https://example.org/u/> .
"""


def test_concepts_in_no_scheme_go_to_a_scheme_named_by_the_caller() -> None:
    snapshot = from_turtle(
        PREFIXES + 'ex:a a skos:Concept ; skos:prefLabel "A" ; skos:narrower ex:b .\n'
        'ex:b skos:prefLabel "B" .\n',
        fallback_title="Loose",
    )
    [scheme] = snapshot.schemes
    assert (scheme.title, scheme.uri) == ("Loose", None)
    by_uri = {c.uri: c.id for c in snapshot.concepts}
    assert {c.scheme_id for c in snapshot.concepts} == {scheme.id}
    # narrower read the other way: b is narrower than a.
    assert [(r.source_id, r.kind, r.target_id) for r in snapshot.relations] == [
        (by_uri["https://example.org/u/b"], "broader", by_uri["https://example.org/u/a"])
    ]


def test_a_concept_without_a_uri_is_exported_with_a_uuid_urn() -> None:
    snapshot = from_turtle(PREFIXES + '[] a skos:Concept ; skos:prefLabel "Anonymous" .\n')
    [concept] = snapshot.concepts
    assert concept.uri is None
    assert f"urn:uuid:{concept.id}" in to_turtle(snapshot)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('ex:a a skos:Concept ; skos:broader ex:z ; skos:prefLabel "A" .', "does not define"),
        ("ex:a a skos:Concept .", "no skos:prefLabel"),
        (f'ex:a a skos:Concept ; skos:prefLabel "{"x" * 201}" .', "over 200"),
        ('ex:a a skos:Concept ; skos:prefLabel "A", "B" .', "S14"),
        ('ex:a a skos:Concept ; skos:prefLabel "A" ; skos:altLabel "a" .', "S13"),
        ('ex:a a skos:Concept ; skos:prefLabel "A" ; skos:broader ex:a .', "broader than itself"),
        ("ex:a a skos:Concept ; skos:prefLabel 'A' ", "does not parse at line 4"),
    ],
)
def test_a_file_the_model_cannot_hold_is_refused_with_the_reason(body: str, message: str) -> None:
    with pytest.raises(BadUserInput, match=message):
        from_turtle(PREFIXES + body + "\n")


def test_more_than_three_broader_or_five_levels_are_refused() -> None:
    wide = "".join(f'ex:p{i} skos:prefLabel "P{i}" .\n' for i in range(4))
    wide += 'ex:c skos:prefLabel "C" ; skos:broader ex:p0, ex:p1, ex:p2, ex:p3 .\n'
    with pytest.raises(BadUserInput) as caught:
        from_turtle(PREFIXES + wide)
    assert caught.value.extensions["reason"] == "max_broader"
    deep = 'ex:l0 skos:prefLabel "L0" .\n' + "".join(
        f'ex:l{i} skos:prefLabel "L{i}" ; skos:broader ex:l{i - 1} .\n' for i in range(1, 6)
    )
    with pytest.raises(BadUserInput) as caught:
        from_turtle(PREFIXES + deep)
    assert caught.value.extensions["reason"] == "max_depth"
