"""The vocabulary through GraphQL: governance needs memory admin, tagging needs write on the
note, concepts are read beside notes without versions, and concept filters narrow note
lists and search before ranking."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest

from fortemi.auth.local_issuer import LocalIssuer
from fortemi.graph.vocabulary import ConceptProposal
from fortemi.platform.notes import NoteDraft
from fortemi.runtime import Runtime
from tests.integration.graphql.conftest import GraphQLCall, error_codes

CONCEPT_FIELDS = """id prefLabel status dimension definition uri
  labels { kind label lang } broader { prefLabel } narrower { prefLabel }
  related { concept { prefLabel } confidence } scheme { title } noteCount"""


@pytest.fixture(scope="session")
def viewer_token(issuer: LocalIssuer) -> str:
    return issuer.mint("vera", roles=["viewer"])


async def _ok(body: dict[str, Any]) -> dict[str, Any]:
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def _scheme(gql: GraphQLCall, admin_token: str, title: str = "Topics") -> str:
    data = await _ok(
        await gql(
            "mutation($i: ConceptSchemeInput!) { createConceptScheme(input: $i) { id } }",
            {"i": {"title": title, "uri": f"https://example.org/{title}"}},
            token=admin_token,
        )
    )
    scheme_id: str = data["createConceptScheme"]["id"]
    return scheme_id


async def _concept(gql: GraphQLCall, admin_token: str, **fields: Any) -> dict[str, Any]:
    data = await _ok(
        await gql(
            f"mutation($i: CreateConceptInput!) {{ createConcept(input: $i) {{ {CONCEPT_FIELDS} }} }}",
            {"i": fields},
            token=admin_token,
        )
    )
    concept: dict[str, Any] = data["createConcept"]
    return concept


async def _note(gql: GraphQLCall, title: str, content: str = "text", **extra: Any) -> str:
    data = await _ok(
        await gql(
            "mutation($i: CreateNoteInput!) { createNote(input: $i) { id } }",
            {"i": {"title": title, "content": content, **extra}},
        )
    )
    note_id: str = data["createNote"]["id"]
    return note_id


TAG = """mutation($n: ID!, $c: [NoteConceptInput!]!) {
  tagNoteConcepts(note: $n, concepts: $c) { conceptId label source confidence primary }
}"""


async def _tag(gql: GraphQLCall, note: str, *concepts: dict[str, Any], **call: Any) -> Any:
    return await gql(TAG, {"n": note, "c": list(concepts)}, **call)


async def test_an_admin_builds_a_hierarchy_and_anyone_in_the_memory_reads_it(
    gql: GraphQLCall, admin_token: str, viewer_token: str
) -> None:
    scheme = await _scheme(gql, admin_token)
    ml = await _concept(
        gql,
        admin_token,
        scheme=scheme,
        prefLabel="Machine learning",
        altLabels=["ML"],
        definition="Learning from data",
        dimension="DOMAIN",
    )
    nlp = await _concept(gql, admin_token, scheme=scheme, prefLabel="NLP", broader=[ml["id"]])
    cv = await _concept(gql, admin_token, scheme=scheme, prefLabel="Vision", broader=[ml["id"]])
    await _ok(
        await gql(
            "mutation($a: ID!, $b: ID!) { relateConcepts(id: $a, related: $b, confidence: 0.5)"
            " { id } }",
            {"a": nlp["id"], "b": cv["id"]},
            token=admin_token,
        )
    )

    data = await _ok(
        await gql(
            f"query($id: ID!) {{ concept(id: $id) {{ {CONCEPT_FIELDS} }} }}",
            {"id": ml["id"]},
            token=viewer_token,
        )
    )
    read = data["concept"]
    assert read["prefLabel"] == "Machine learning"
    assert {(x["kind"], x["label"]) for x in read["labels"]} == {
        ("PREF", "Machine learning"),
        ("ALT", "ML"),
    }
    assert sorted(x["prefLabel"] for x in read["narrower"]) == ["NLP", "Vision"]
    assert read["status"] == "CANDIDATE"
    assert read["dimension"] == "DOMAIN"
    assert read["scheme"] == {"title": "Topics"}
    data = await _ok(
        await gql(
            "query($id: ID!) { concept(id: $id) { broader { prefLabel } "
            "related { concept { prefLabel } confidence } } }",
            {"id": cv["id"]},
        )
    )
    assert data["concept"] == {
        "broader": [{"prefLabel": "Machine learning"}],
        "related": [{"concept": {"prefLabel": "NLP"}, "confidence": 0.5}],
    }
    tops = await _ok(await gql("{ conceptSchemes { title topConcepts { prefLabel } } }"))
    assert tops["conceptSchemes"] == [
        {"title": "Topics", "topConcepts": [{"prefLabel": "Machine learning"}]}
    ]


async def test_governance_needs_memory_admin(
    gql: GraphQLCall, admin_token: str, user_token: str
) -> None:
    scheme = await _scheme(gql, admin_token)
    body = await gql(
        "mutation($i: CreateConceptInput!) { createConcept(input: $i) { id } }",
        {"i": {"scheme": scheme, "prefLabel": "x"}},
        token=user_token,
    )
    assert error_codes(body) == ["FORBIDDEN"]
    body = await gql(
        "mutation($i: ConceptSchemeInput!) { createConceptScheme(input: $i) { id } }",
        {"i": {"title": "mine"}},
    )
    assert error_codes(body) == ["FORBIDDEN"]


async def test_governance_keeps_skos_integrity(gql: GraphQLCall, admin_token: str) -> None:
    scheme = await _scheme(gql, admin_token)
    a = await _concept(gql, admin_token, scheme=scheme, prefLabel="A")
    b = await _concept(gql, admin_token, scheme=scheme, prefLabel="B", broader=[a["id"]])
    same = await gql(
        "mutation($i: CreateConceptInput!) { createConcept(input: $i) { id } }",
        {"i": {"scheme": scheme, "prefLabel": "a"}},
        token=admin_token,
    )
    assert error_codes(same) == ["CONFLICT"]
    cycle = await gql(
        "mutation($a: ID!, $b: ID!) { addBroaderConcept(id: $a, broader: $b) { id } }",
        {"a": a["id"], "b": b["id"]},
        token=admin_token,
    )
    assert error_codes(cycle) == ["BAD_USER_INPUT"]
    assert cycle["errors"][0]["extensions"]["reason"] == "cycle"
    related = await gql(
        "mutation($a: ID!, $b: ID!) { relateConcepts(id: $a, related: $b) { id } }",
        {"a": a["id"], "b": b["id"]},
        token=admin_token,
    )
    assert error_codes(related) == ["CONFLICT"]
    warrant = await gql(
        "mutation($a: ID!) { updateConcept(id: $a, input: {status: CONTROLLED}) { status } }",
        {"a": a["id"]},
        token=admin_token,
    )
    assert error_codes(warrant) == ["CONFLICT"]
    assert warrant["errors"][0]["extensions"]["reason"] == "literary_warrant"
    deprecated = await _ok(
        await gql(
            "mutation($a: ID!) { updateConcept(id: $a, input: {status: DEPRECATED}) { status } }",
            {"a": a["id"]},
            token=admin_token,
        )
    )
    assert deprecated["updateConcept"]["status"] == "DEPRECATED"


async def test_tagging_a_note_attaches_concepts_without_a_version(gql: GraphQLCall) -> None:
    note = await _note(gql, "Attention")
    tagged = await _ok(
        await _tag(
            gql,
            note,
            {"path": "ml/transformers", "primary": True, "confidence": 0.9},
            {"path": "papers", "dimension": "CONTENT_TYPE"},
        )
    )
    assert [(c["label"], c["source"], c["primary"]) for c in tagged["tagNoteConcepts"]] == [
        ("transformers", "API", True),
        ("papers", "API", False),
    ]
    data = await _ok(
        await gql(
            "query($id: ID!) { note(id: $id) { version concepts { label confidence "
            "concept { broader { prefLabel } } } } }",
            {"id": note},
        )
    )
    assert data["note"]["version"] == 1
    assert data["note"]["concepts"][0] == {
        "label": "transformers",
        "confidence": 0.9,
        "concept": {"broader": [{"prefLabel": "ml"}]},
    }

    concept = tagged["tagNoteConcepts"][1]["conceptId"]
    removed = await _ok(
        await gql(
            "mutation($n: ID!, $c: ID!) { untagNoteConcept(note: $n, concept: $c) }",
            {"n": note, "c": concept},
        )
    )
    assert removed["untagNoteConcept"] is True
    data = await _ok(
        await gql("query($id: ID!) { note(id: $id) { concepts { label } } }", {"id": note})
    )
    assert data["note"]["concepts"] == [{"label": "transformers"}]


async def test_tagging_needs_write_on_the_note_and_hides_unreadable_ones(
    gql: GraphQLCall, viewer_token: str, runtime: Runtime, memory: str
) -> None:
    note = await _note(gql, "Visible")
    assert error_codes(await _tag(gql, note, {"path": "x"}, token=viewer_token)) == ["FORBIDDEN"]
    # No policy lets anyone read project "secret": its note does not exist for alice.
    hidden = await runtime.services.notes.create(
        memory, NoteDraft(title="Hidden", project="secret"), actor="test"
    )
    assert error_codes(await _tag(gql, str(hidden.id), {"path": "x"})) == ["NOT_FOUND"]
    too_deep = await _tag(gql, note, {"path": "a/b/c/d/e/f"})
    assert error_codes(too_deep) == ["BAD_USER_INPUT"]
    assert too_deep["errors"][0]["extensions"]["reason"] == "max_depth"


NOTES = """query($f: NoteFilter) { notes(filter: $f, first: 50) { edges { node { title } } } }"""


async def _titles(gql: GraphQLCall, concepts: dict[str, Any]) -> list[str]:
    data = await _ok(await gql(NOTES, {"f": {"concepts": concepts}}))
    return sorted(edge["node"]["title"] for edge in data["notes"]["edges"])


async def test_note_lists_filter_by_concepts_with_their_descendants(gql: GraphQLCall) -> None:
    ids: dict[str, str] = {}
    for title, paths in {
        "nlp": ["ml/nlp", "papers"],
        "vision": ["ml/vision"],
        "ml": ["ml"],
        "cooking": ["food"],
        "cooking paper": ["food", "papers"],
    }.items():
        note = await _note(gql, title)
        body = await _ok(await _tag(gql, note, *({"path": p} for p in paths)))
        for concept, path in zip(body["tagNoteConcepts"], paths, strict=True):
            ids[path] = concept["conceptId"]

    assert await _titles(gql, {"required": [ids["ml"]]}) == ["ml", "nlp", "vision"]
    listed = await _ok(
        await gql("{ notes(first: 10) { edges { node { title concepts { label } } } } }")
    )
    # Each note of the page gets its own concepts (read together, in one batch).
    assert {
        e["node"]["title"]: sorted(c["label"] for c in e["node"]["concepts"])
        for e in listed["notes"]["edges"]
    } == {
        "nlp": ["nlp", "papers"],
        "vision": ["vision"],
        "ml": ["ml"],
        "cooking": ["food"],
        "cooking paper": ["food", "papers"],
    }
    assert await _titles(gql, {"required": [ids["ml"], ids["papers"]]}) == ["nlp"]
    assert await _titles(gql, {"any": [ids["ml/vision"], ids["food"]]}) == [
        "cooking",
        "cooking paper",
        "vision",
    ]
    assert await _titles(gql, {"excluded": [ids["ml"]]}) == ["cooking", "cooking paper"]
    scheme = (await _ok(await gql("{ conceptSchemes { id isDefault } }")))["conceptSchemes"]
    assert [s["isDefault"] for s in scheme] == [True]
    assert await _titles(gql, {"excludedSchemes": [scheme[0]["id"]]}) == []
    unknown = await gql(NOTES, {"f": {"concepts": {"required": [str(uuid4())]}}})
    assert error_codes(unknown) == ["BAD_USER_INPUT"]


SEARCH = """query($q: String!, $f: SearchFilter, $limit: Int) {
  search(query: $q, mode: LEXICAL, limit: $limit, filter: $f) { hits { note { title } } }
}"""


async def test_search_applies_concept_filters_before_ranking(gql: GraphQLCall) -> None:
    # Ten notes rank above the tagged ones for "kubernetes"; a top-2 filtered after
    # ranking would be empty, filtered before it holds the two tagged notes, best first.
    for i in range(10):
        await _note(gql, f"kubernetes {i}", "kubernetes kubernetes kubernetes pods")
    strong = await _note(gql, "tagged strong", "kubernetes kubernetes")
    weak = await _note(gql, "tagged weak", "kubernetes and much else besides, at length")
    body = await _ok(await _tag(gql, strong, {"path": "ops/k8s"}))
    k8s = body["tagNoteConcepts"][0]["conceptId"]
    await _ok(await _tag(gql, weak, {"concept": k8s}))
    parent = await _ok(await gql('{ concepts(label: "ops") { edges { node { id } } } }'))

    ops = parent["concepts"]["edges"][0]["node"]["id"]
    data = await _ok(
        await gql(SEARCH, {"q": "kubernetes", "limit": 2, "f": {"concepts": {"required": [ops]}}})
    )
    assert [h["note"]["title"] for h in data["search"]["hits"]] == ["tagged strong", "tagged weak"]
    data = await _ok(
        await gql(SEARCH, {"q": "kubernetes", "limit": 20, "f": {"concepts": {"excluded": [k8s]}}})
    )
    assert len(data["search"]["hits"]) == 10


async def test_path_tags_on_a_note_become_its_user_concepts(gql: GraphQLCall) -> None:
    note = await _note(gql, "Tagged", tags=["lang/python", "todo"])
    data = await _ok(
        await gql(
            "query($id: ID!) { note(id: $id) { version concepts { label source } } }", {"id": note}
        )
    )
    assert data["note"] == {"version": 1, "concepts": [{"label": "python", "source": "USER"}]}


async def test_collections_keep_their_members_order(gql: GraphQLCall, admin_token: str) -> None:
    scheme = await _scheme(gql, admin_token)
    a = await _concept(gql, admin_token, scheme=scheme, prefLabel="first")
    b = await _concept(gql, admin_token, scheme=scheme, prefLabel="second")
    data = await _ok(
        await gql(
            "mutation($i: CreateConceptCollectionInput!) { createConceptCollection(input: $i)"
            " { id ordered members { prefLabel } } }",
            {
                "i": {
                    "scheme": scheme,
                    "label": "Steps",
                    "ordered": True,
                    "members": [b["id"], a["id"]],
                }
            },
            token=admin_token,
        )
    )
    created = data["createConceptCollection"]
    assert created["members"] == [{"prefLabel": "second"}, {"prefLabel": "first"}]
    data = await _ok(
        await gql(
            "mutation($c: ID!, $m: [ID!]!) { setConceptCollectionMembers(id: $c, members: $m)"
            " { members { prefLabel } } }",
            {"c": created["id"], "m": [a["id"], b["id"]]},
            token=admin_token,
        )
    )
    assert data["setConceptCollectionMembers"]["members"] == [
        {"prefLabel": "first"},
        {"prefLabel": "second"},
    ]


TURTLE = """@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix ex: <https://example.org/t/> .
ex:s a skos:ConceptScheme .
ex:a a skos:Concept ; skos:inScheme ex:s ; skos:prefLabel "Alpha"@en, "Alfa"@pt .
ex:b a skos:Concept ; skos:inScheme ex:s ; skos:prefLabel "Beta"@en ; skos:broader ex:a .
"""

IMPORT = """mutation($t: String!) {
  importSkos(turtle: $t, schemeTitle: "Greek") { schemes { title uri } concepts labels relations }
}"""


async def test_skos_import_needs_admin_and_round_trips_through_export(
    gql: GraphQLCall, admin_token: str
) -> None:
    assert error_codes(await gql(IMPORT, {"t": TURTLE})) == ["FORBIDDEN"]
    bad = await gql(
        IMPORT,
        {"t": TURTLE.replace("skos:ConceptScheme .", "skos:ConceptScheme")},
        token=admin_token,
    )
    assert error_codes(bad) == ["BAD_USER_INPUT"]
    assert bad["errors"][0]["extensions"]["line"] == 4
    data = await _ok(await gql(IMPORT, {"t": TURTLE}, token=admin_token))
    assert data["importSkos"] == {
        "schemes": [{"title": "https://example.org/t/s", "uri": "https://example.org/t/s"}],
        "concepts": 2,
        "labels": 3,
        "relations": 1,
    }
    exported = (await _ok(await gql("{ exportSkos }")))["exportSkos"]
    assert '"Alfa"@pt' in exported
    assert "skos:narrower" in exported
    again = await gql(IMPORT, {"t": exported}, token=admin_token)
    assert error_codes(again) == ["CONFLICT"]


async def test_vocabulary_health_reports_meta_tags_and_synonym_sprawl(gql: GraphQLCall) -> None:
    note = await _note(gql, "Mixed bag")
    await _ok(await _tag(gql, note, {"path": "To-Read"}, {"path": "ml/Neural Nets"},
                         {"path": "neural-net"}))  # fmt: skip
    data = await _ok(
        await gql(
            "{ vocabularyHealth { concepts metaTags synonymSprawl orphans "
            "issues { kind labels } } }"
        )
    )
    health = data["vocabularyHealth"]
    assert (health["concepts"], health["metaTags"], health["synonymSprawl"]) == (4, 1, 1)
    assert {"kind": "META_TAG", "labels": ["To-Read"]} in health["issues"]
    assert {"kind": "SYNONYM_SPRAWL", "labels": ["Neural Nets", "neural-net"]} in health["issues"]
    assert health["orphans"] == 0


async def test_a_concepts_note_count_counts_only_notes_the_caller_may_read(
    gql: GraphQLCall, runtime: Runtime, memory: str
) -> None:
    readable = await _note(gql, "open")
    tagged = await _ok(await _tag(gql, readable, {"path": "shared"}))
    concept = tagged["tagNoteConcepts"][0]["conceptId"]
    services = runtime.services
    hidden = await services.notes.create(
        memory, NoteDraft(title="Hidden", project="secret"), actor="test"
    )
    await services.vocabulary.tag_note(
        memory, hidden.id, [ConceptProposal(("shared",), None, 1.0, 1.0)], source="api", actor="t"
    )
    data = await _ok(
        await gql("query($id: ID!) { concept(id: $id) { noteCount } }", {"id": concept})
    )
    assert data["concept"]["noteCount"] == 1
    listed = await _titles(gql, {"required": [concept]})
    assert listed == ["open"]
