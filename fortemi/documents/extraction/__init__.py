"""Extraction: a file's bytes to searchable text, metadata and a preview, by document type."""

from fortemi.documents.extraction.base import (
    Extracted,
    ExtractionStatus,
    Extractor,
    Health,
    Limits,
)

__all__ = ["Extracted", "ExtractionStatus", "Extractor", "Health", "Limits"]
