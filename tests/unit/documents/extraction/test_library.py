"""The library's contract: dispatch by the detected type, FAILED and SKIPPED with reasons
instead of exceptions, the text limit, the cooperative time budget, health per adapter."""

from __future__ import annotations

import itertools

from fortemi.documents.detection import detect
from fortemi.documents.extraction import ExtractionStatus, Health, Limits
from fortemi.documents.extraction._run import Read, Run
from fortemi.documents.extraction.library import LibraryExtractor, default_adapters
from fortemi.documents.models import Detection, Extraction
from fortemi.documents.registry import system_index
from fortemi.platform.settings import Settings
from tests.support.documents import png_file
from tests.unit.documents.extraction._helpers import extract

PNG = png_file()


class _Exploding:
    name = "text"

    def read(self, data: bytes, *, filename: str | None, detection: Detection, run: Run) -> Read:
        raise KeyError("a library bug")

    def health(self) -> Health:
        return Health(self.name, True, "test")


def test_a_zero_byte_file_is_skipped_as_empty_not_failed() -> None:
    found = extract(b"", "empty.txt")

    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason is not None
    assert found.reason.startswith("empty: ")


def test_a_type_without_text_is_skipped_with_its_name_in_the_reason() -> None:
    found = extract(b"\xca\xfe\xba\xbe\x00\x00\x00\x34" + bytes(64), "Main.class")

    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason == "no_text: Java class file files carry no text to extract"


def test_an_adapter_that_raises_is_contained_as_failed_with_an_internal_reason() -> None:
    extractor = LibraryExtractor({Extraction.TEXT: _Exploding()})

    found = extract(b"print('hi')\n", "a.py", extractor=extractor)

    assert found.status is ExtractionStatus.FAILED
    assert found.reason == "internal: KeyError while reading the file"


def test_a_family_without_an_adapter_is_skipped_as_unsupported() -> None:
    extractor = LibraryExtractor({Extraction.TEXT: default_adapters()[Extraction.TEXT]})

    found = extract(b'{"a": 1}', "a.json", extractor=extractor)

    assert (found.status, found.reason) == (
        ExtractionStatus.SKIPPED,
        "unsupported: no structured adapter in this build",
    )


def test_the_time_budget_is_checked_between_rows_and_fails_the_file() -> None:
    ticks = itertools.count(0.0, 1.0)  # every look at the clock is a second later
    extractor = LibraryExtractor(clock=lambda: next(ticks))
    rows = b"a,b\n" + b"1,2\n" * 20_000

    detection = detect(system_index(), "t.csv", None, rows)
    found = extractor.extract(
        rows, filename="t.csv", detection=detection, limits=Limits(time_budget_seconds=1.5)
    )

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("time_limit: ")


def test_health_lists_every_adapter() -> None:
    health = LibraryExtractor().health()

    assert {h.adapter for h in health} >= {"text", "structured"}
    assert all(h.healthy for h in health if h.adapter in {"text", "structured"})


def test_the_extractor_is_built_from_the_settings() -> None:
    extractor = LibraryExtractor.from_settings(Settings())

    found = extractor.extract(
        b"hello",
        filename="a.txt",
        detection=detect(system_index(), "a.txt", None, b"hello"),
        limits=Limits(),
    )

    assert (found.status, found.text, found.preview) == (ExtractionStatus.DONE, "hello", "hello")


def test_a_vision_model_without_an_ollama_host_says_what_is_missing() -> None:
    extractor = LibraryExtractor.from_settings(Settings(vision_model="llava", ollama_host=None))

    health = {h.adapter: h for h in extractor.health()}
    found = extractor.extract(
        PNG, filename="a.png", detection=detect(system_index(), "a.png", None, PNG),
        limits=Limits(),
    )  # fmt: skip

    assert health["image"].healthy is False
    assert "FORTEMI_VISION_MODEL names 'llava' but OLLAMA_HOST is unset" in health["image"].detail
    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason == (
        "vision_not_configured: FORTEMI_VISION_MODEL names 'llava' but OLLAMA_HOST is unset "
        "to describe images"
    )
