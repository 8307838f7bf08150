"""Structured data: validity, top-level keys or headers, counts, then text; hostile
documents (entity bombs, external entities, deep nesting) reported, never expanded."""

from __future__ import annotations

import pytest

from fortemi.documents.extraction import ExtractionStatus
from tests.unit.documents.extraction._helpers import extract


def test_json_reports_its_top_level_keys_and_keeps_the_source_as_text() -> None:
    source = b'{"name": "fortemi", "tags": ["a", "b"], "n": 3}'

    found = extract(source, "data.json")

    assert (found.status, found.adapter) == (ExtractionStatus.DONE, "structured")
    assert found.metadata["valid"] is True
    assert found.metadata["top_level"] == "object"
    assert found.metadata["keys"] == ["name", "tags", "n"]
    assert found.text == source.decode()


def test_a_json_array_reports_its_length() -> None:
    found = extract(b"[1, 2, 3, 4]", "list.json")

    assert (found.metadata["top_level"], found.metadata["items"]) == ("array", 4)


def test_invalid_json_is_still_searchable_and_marked_invalid() -> None:
    found = extract(b'{"name": "x",, }', "broken.json")

    assert found.status is ExtractionStatus.DONE
    assert found.metadata["valid"] is False
    assert found.metadata["error"].startswith("json: ")
    assert "name" in found.text


def test_json_nested_past_any_reason_is_invalid_not_a_crash() -> None:
    found = extract(b"[" * 100_000 + b"]" * 100_000, "deep.json")

    assert (found.status, found.metadata["valid"]) == (ExtractionStatus.DONE, False)


def test_a_type_that_is_a_kind_of_json_is_parsed_as_json() -> None:
    found = extract(b'{"name": "pkg", "version": "1.0.0"}', "package.json")

    assert (found.metadata["format"], found.metadata["keys"]) == ("json", ["name", "version"])


def test_json_lines_counts_records_and_bad_lines() -> None:
    found = extract(b'{"a": 1}\n{"b": 2}\nnot json\n{"a": 3}\n', "events.jsonl")

    assert found.metadata["records"] == 3
    assert found.metadata["invalid_records"] == 1
    assert found.metadata["keys"] == ["a", "b"]


def test_yaml_reports_documents_and_keys() -> None:
    found = extract(b"name: x\nitems:\n  - 1\n---\nother: 2\n", "conf.yaml")

    assert found.metadata["valid"] is True
    assert (found.metadata["documents"], found.metadata["keys"]) == (2, ["name", "items"])


def test_a_yaml_alias_bomb_is_not_expanded() -> None:
    bomb = b'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + b"".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n".encode()
        for i in range(9)
    )

    found = extract(bomb, "bomb.yaml")

    assert found.status is ExtractionStatus.DONE
    assert len(found.metadata["keys"]) == 10
    assert len(found.text) == len(bomb)


def test_invalid_yaml_is_marked_invalid() -> None:
    found = extract(b"key: [unclosed\nother: 1\n", "bad.yml")

    assert (found.metadata["valid"], found.metadata["error"][:5]) == (False, "yaml:")


def test_toml_reports_its_tables_and_keys() -> None:
    found = extract(b'[project]\nname = "x"\n\n[tool.ruff]\nline-length = 100\n', "pyproject.toml")

    assert found.metadata["keys"] == ["project", "tool"]


def test_xml_text_is_its_character_data_with_root_and_child_tags() -> None:
    source = (
        b'<?xml version="1.0"?>\n<catalog xmlns="urn:x"><book id="1"><title>Dune</title>'
        b"</book><book><title>Emma</title></book><note>hi</note></catalog>"
    )

    found = extract(source, "catalog.xml")

    assert found.metadata["valid"] is True
    assert (found.metadata["root"], found.metadata["keys"]) == ("catalog", ["book", "note"])
    assert found.metadata["elements"] == 6
    assert found.text == "Dune\nEmma\nhi"


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><l>&b;</l>', id="entity-bomb"),
        pytest.param(b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>', id="external-entity"),
    ],
)  # fmt: skip
def test_xml_entities_are_refused_and_never_expanded(source: bytes) -> None:
    found = extract(source, "evil.xml")

    assert found.status is ExtractionStatus.DONE
    assert found.metadata["valid"] is False
    assert found.metadata["error"].startswith("xml: refused: ")
    assert "root:" not in found.text
    assert "aaaaaaaaaaaaaaaaaaaa" not in found.text


def test_csv_reports_headers_rows_and_columns() -> None:
    found = extract(b"name,age,city\nada,36,london\nalan,41,wilmslow\n", "people.csv")

    assert found.metadata["headers"] == ["name", "age", "city"]
    assert (found.metadata["rows"], found.metadata["columns"]) == (2, 3)
    assert "wilmslow" in found.text


def test_a_semicolon_csv_is_sniffed() -> None:
    found = extract(b"a;b\n1;2\n3;4\n", "euro.csv")

    assert (found.metadata["delimiter"], found.metadata["headers"]) == (";", ["a", "b"])


def test_tsv_is_split_on_tabs() -> None:
    found = extract(b"x\ty\n1\t2\n", "t.tsv")

    assert (found.metadata["headers"], found.metadata["rows"]) == (["x", "y"], 1)


def test_a_data_type_without_a_parser_is_read_as_text() -> None:
    found = extract(b"[section]\nkey = value\n", "setup.ini")

    assert (found.status, found.metadata["format"]) == (ExtractionStatus.DONE, "text")
    assert found.text == "[section]\nkey = value\n"


def test_a_binary_data_format_without_a_reader_is_skipped() -> None:
    found = extract(b"Obj\x01" + bytes(200), "rows.avro")

    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason is not None
    assert found.reason.startswith("unsupported_format: ")


def test_a_structured_file_over_the_text_limit_is_cut_and_not_judged() -> None:
    from fortemi.documents.extraction import Limits

    found = extract(b'{"items": [' + b'"x", ' * 1000 + b'"y"]}', "big.json",
                    limits=Limits(max_text_bytes=100))  # fmt: skip

    assert found.status is ExtractionStatus.DONE
    assert (found.metadata["truncated"], found.metadata["valid"]) == (True, None)
    assert len(found.text.encode()) == 100
