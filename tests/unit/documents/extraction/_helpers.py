"""Run the library on bytes as an attachment would: detection first, then extraction."""

from __future__ import annotations

from fortemi.documents.detection import detect
from fortemi.documents.extraction import Extracted, Limits
from fortemi.documents.extraction.library import LibraryExtractor
from fortemi.documents.registry import system_index

__all__ = ["extract"]


def extract(
    data: bytes,
    filename: str | None,
    mime: str | None = None,
    *,
    limits: Limits | None = None,
    extractor: LibraryExtractor | None = None,
) -> Extracted:
    detection = detect(system_index(), filename, mime, data)
    return (extractor or LibraryExtractor()).extract(
        data, filename=filename, detection=detection, limits=limits or Limits()
    )
