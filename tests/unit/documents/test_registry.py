"""The system types load from data and validate; a malformed definition is refused with
the field that is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from fortemi.documents.models import Category, ChunkingStrategy, Extraction
from fortemi.documents.registry import TypeIndex, parse_type, system_index, system_types
from fortemi.platform.errors import BadUserInput


def test_at_least_120_system_types_ship_with_unique_names_in_every_category() -> None:
    types = system_types()

    assert len(types) >= 120
    assert len({t.name for t in types}) == len(types)
    assert {t.category for t in types} == set(Category)
    assert all(t.system for t in types)


def test_system_types_take_their_categorys_defaults_unless_they_say_otherwise() -> None:
    types = system_index().by_name
    python, markdown, png, sqlite = (types[n] for n in ("python", "markdown", "png", "sqlite"))

    assert python.chunking is ChunkingStrategy.SYNTACTIC
    assert markdown.chunking is ChunkingStrategy.SEMANTIC
    assert (png.binary, png.extraction) == (True, Extraction.IMAGE)
    assert (sqlite.category, sqlite.binary) == (Category.DATA, True)


def test_every_extension_and_mime_type_of_the_system_names_one_type() -> None:
    extensions = [e for t in system_types() for e in t.extensions]
    mimes = [m for t in system_types() for m in t.mime_types]

    assert len(set(extensions)) == len(extensions)
    assert len(set(mimes)) == len(mimes)


def _valid(**changes: Any) -> dict[str, Any]:
    return {"name": "memo", "display_name": "Memo", "category": "prose", **changes}


def test_a_minimal_custom_definition_is_completed_from_its_categorys_defaults() -> None:
    memo = parse_type(_valid(extensions=[".MEMO"], mime_types=["Text/X-Memo"]))

    assert memo.extensions == (".memo",)
    assert memo.mime_types == ("text/x-memo",)
    assert memo.chunking is ChunkingStrategy.SEMANTIC
    assert not memo.system


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        pytest.param({"name": "Not A Name"}, "name", id="name"),
        pytest.param({"category": "poetry"}, "category", id="category"),
        pytest.param({"extensions": [".md", "txt"]}, "extensions[1]", id="extension-without-dot"),
        pytest.param({"mime_types": ["text"]}, "mimeTypes[0]", id="mime-without-subtype"),
        pytest.param({"filename_patterns": ["dir/Makefile"]}, "filenamePatterns[0]", id="path"),
        pytest.param({"magic": [{"hex": "zz"}]}, "magic[0]", id="magic-not-hex"),
        pytest.param({"magic": [{"hex": "00", "text": "a"}]}, "magic[0]", id="magic-both"),
        pytest.param({"magic": [{"text": "\u20ac"}]}, "magic[0]", id="magic-not-bytes"),
        pytest.param({"chunk_size": 50}, "chunkSize", id="chunk-too-small"),
        pytest.param({"chunk_size": 400, "chunk_overlap": 200}, "chunkOverlap", id="overlap"),
        pytest.param({"colour": "red"}, "colour", id="unknown-field"),
        pytest.param({"display_name": ""}, "displayName", id="empty-display-name"),
    ],
)
def test_a_malformed_definition_is_bad_user_input_naming_the_field(
    changes: dict[str, Any], field: str
) -> None:
    with pytest.raises(BadUserInput) as refused:
        parse_type(_valid(**changes))

    assert refused.value.extensions["field"] == field
    assert refused.value.extensions["reason"] == "invalid_document_type"
    assert field in refused.value.message


def test_a_custom_type_is_found_before_a_system_type_with_the_same_keys() -> None:
    custom = parse_type(
        _valid(
            name="house-python", category="code", extensions=[".py"], mime_types=["text/x-python"]
        )
    )
    index = TypeIndex([custom], system_types())

    assert index.for_extension("tool.py") is custom
    assert index.for_mime("text/x-python") is custom
    assert index.get("python") is not None  # the system type is still there by name


def test_extensions_are_tried_longest_first_and_dotfiles_have_none() -> None:
    index = system_index()

    assert index.for_extension("backup.tar.gz") == index.get("gzip")
    assert index.for_extension("data.json") == index.get("json")
    assert index.for_extension(".bashrc") is None


def test_the_graphql_enums_mirror_the_models() -> None:
    from fortemi.documents import models
    from fortemi.graphql import documents as api

    pairs = [
        (api.DocumentCategory, models.Category),
        (api.ChunkingStrategy, models.ChunkingStrategy),
        (api.ExtractionStrategy, models.Extraction),
        (api.DetectionMethod, models.Method),
    ]
    for exposed, model in pairs:
        assert {(m.name, m.value) for m in exposed} == {(m.name, m.value) for m in model}
