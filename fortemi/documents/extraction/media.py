"""Audio (and the sound of video): a transcript from a Whisper-compatible server, when
one is configured (``FORTEMI_TRANSCRIPTION_URL``); otherwise ``SKIPPED`` saying so.
Such servers decode the container themselves (ffmpeg), so the file is sent as it is."""

from __future__ import annotations

from fortemi.documents.extraction._run import Read, Run, Unavailable
from fortemi.documents.extraction.base import Health
from fortemi.documents.extraction.services import Transcriber
from fortemi.documents.models import Detection

__all__ = ["MediaAdapter"]


class MediaAdapter:
    name = "transcription"

    def __init__(self, transcriber: Transcriber | None = None) -> None:
        self._transcriber = transcriber

    def health(self) -> Health:
        if self._transcriber is None:
            detail = "no transcription server configured (FORTEMI_TRANSCRIPTION_URL)"
            return Health(self.name, False, detail)
        return Health(
            self.name, True, f"Whisper-compatible server, model {self._transcriber.model}"
        )

    def read(self, data: bytes, *, filename: str | None, detection: Detection, run: Run) -> Read:
        if self._transcriber is None:
            raise Unavailable(
                "transcription_not_configured",
                "no transcription server configured (FORTEMI_TRANSCRIPTION_URL) "
                f"to transcribe {detection.type.display_name} files",
            )
        run.check("before the transcription")
        name = (
            filename or f"audio{detection.type.extensions[0] if detection.type.extensions else ''}"
        )
        text, found = self._transcriber.transcribe(data, name, detection.type.mime_type)
        return Read(text, {**found, "transcribed_by": self._transcriber.model})
