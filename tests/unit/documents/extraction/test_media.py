"""Audio and video: SKIPPED without a transcription server, the transcript with one."""

from __future__ import annotations

from typing import Any

from fortemi.documents.extraction import ExtractionStatus
from fortemi.documents.extraction.library import LibraryExtractor, default_adapters
from tests.unit.documents.extraction._helpers import extract

MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(200)


class _Transcriber:
    model = "whisper-test"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def transcribe(self, audio: bytes, filename: str, mime: str) -> tuple[str, dict[str, Any]]:
        self.calls.append((filename, mime, len(audio)))
        return "hello from the recording", {"language": "en"}


def test_without_a_transcription_server_audio_is_skipped_saying_so() -> None:
    found = extract(MP3, "memo.mp3")

    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason is not None
    assert found.reason.startswith("transcription_not_configured: ")


def test_with_a_transcriber_the_transcript_is_the_text() -> None:
    transcriber = _Transcriber()
    extractor = LibraryExtractor(default_adapters(transcriber=transcriber))

    found = extract(MP3, "memo.mp3", extractor=extractor)

    assert (found.status, found.text) == (ExtractionStatus.DONE, "hello from the recording")
    assert found.metadata == {
        "language": "en",
        "transcribed_by": "whisper-test",
        "truncated": False,
    }
    assert transcriber.calls == [("memo.mp3", "audio/mpeg", len(MP3))]


def test_health_says_which_service_adapters_are_not_configured() -> None:
    health = {h.adapter: h for h in LibraryExtractor().health()}

    assert health["transcription"].healthy is False
    assert "FORTEMI_TRANSCRIPTION_URL" in health["transcription"].detail
    assert health["image"].healthy is False
    assert {"text", "structured", "pdf", "office", "email", "html", "archive"} <= {
        name for name, h in health.items() if h.healthy}  # fmt: skip
