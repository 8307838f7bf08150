"""What a composition embeds and how it names its set."""

from __future__ import annotations

import hashlib
import json

from fortemi.platform.settings import Settings
from fortemi.retrieval.sets import DocumentComposition, composition_for, set_name


def test_the_default_composition_keeps_the_fingerprint_it_had_before_concepts_existed() -> None:
    # The JSON every set made so far recorded: the same set name, so nothing re-embeds.
    before = {
        "include_title": True,
        "include_content": True,
        "include_tags": False,
        "document_prefix": "",
        "query_prefix": "",
    }
    raw = json.dumps(before, sort_keys=True).encode()
    assert composition_for("all-MiniLM-L6-v2").as_json() == before
    assert (
        composition_for("all-MiniLM-L6-v2").fingerprint()
        == hashlib.blake2b(raw, digest_size=4).hexdigest()
    )
    assert Settings.model_fields["embed_concepts"].default is False


def test_a_composition_with_concepts_records_them_and_names_another_set() -> None:
    plain = composition_for("all-MiniLM-L6-v2")
    enriched = composition_for("all-MiniLM-L6-v2", concepts=True)
    assert enriched.as_json()["include_concepts"] is True
    assert DocumentComposition.from_json(enriched.as_json()) == enriched
    assert set_name("all-MiniLM-L6-v2", 384, plain) != set_name("all-MiniLM-L6-v2", 384, enriched)
    nomic = composition_for("nomic-embed-text", concepts=True)
    assert (nomic.query_prefix, nomic.include_concepts) == ("search_query: ", True)


def test_concept_paths_come_after_the_title_and_before_the_chunk() -> None:
    enriched = DocumentComposition(include_concepts=True)
    text = enriched.document("Lenses", "How lenses bend light.", [], ["physics > optics", "glass"])
    assert text == "Lenses\n\nConcepts: physics > optics; glass\n\nHow lenses bend light."
    # Without concepts, or with the setting off, the text is what it always was.
    assert enriched.document("Lenses", "Body.", []) == "Lenses\n\nBody."
    assert DocumentComposition().document("Lenses", "Body.", [], ["physics"]) == "Lenses\n\nBody."
