"""Plain text and code: the bytes as lossy UTF-8, with character, word and line counts."""

from __future__ import annotations

from fortemi.documents.detection import PREFIX_BYTES, looks_binary
from fortemi.documents.extraction._run import Read, Run, TextSink, Unreadable, counts, decode_text
from fortemi.documents.extraction.base import Health
from fortemi.documents.models import Detection

__all__ = ["TextAdapter", "read_text"]


def read_text(data: bytes, detection: Detection, run: Run) -> tuple[str, bool, dict[str, object]]:
    """The text of ``data`` within the text limit: (text, truncated, metadata).

    Bytes that are not text (detection's own test, on the first bytes) are refused rather
    than indexed as replacement characters: a binary file named ``.txt`` is a mislabelled
    file, not a document.
    """
    if looks_binary(data[:PREFIX_BYTES]):
        raise Unreadable(
            "not_text",
            f"the content is binary although taken for {detection.type.display_name}; "
            "upload it with its real name or type",
        )
    # Only what the limit keeps is decoded (4 bytes more, so a character cut at the limit
    # still decodes whole before the sink cuts on a character boundary).
    limit = run.limits.max_text_bytes
    text, encoding, replaced = decode_text(data[: limit + 4])
    sink = TextSink(limit)
    sink.write(text)
    kept = sink.text()
    metadata: dict[str, object] = {"encoding": encoding, "replaced_characters": replaced}
    return kept, sink.truncated or len(data) > limit + 4, metadata


class TextAdapter:
    name = "text"

    def read(self, data: bytes, *, filename: str | None, detection: Detection, run: Run) -> Read:
        text, truncated, metadata = read_text(data, detection, run)
        # Counts are of the extracted text (what search sees), not of bytes past the limit.
        return Read(text, {**metadata, **counts(text)}, truncated=truncated)

    def health(self) -> Health:
        return Health(self.name, True, "built in")
