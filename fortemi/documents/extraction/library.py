"""The extraction library: one adapter per extraction family, chosen by the detected type.

:class:`LibraryExtractor` is the :class:`~fortemi.documents.extraction.base.Extractor` the
Extraction job calls. It dispatches on ``detection.type.extraction`` and holds the
contract every adapter relies on:

* it never raises for a file: what an adapter cannot read is ``FAILED`` with the reason
  ``"code: detail"`` (``corrupt_pdf: ...``, ``time_limit: ...``), an adapter whose service
  is not configured answers ``SKIPPED`` with why, and an unexpected error in an adapter is
  contained the same way as ``FAILED`` (``internal: ...``) and logged;
* the text is cut at ``limits.max_text_bytes`` of UTF-8 and ``metadata["truncated"]``
  says whether it was;
* the time budget is cooperative (see :class:`~fortemi.documents.extraction._run.Run`):
  adapters check it between pages, members, rows, slides and sheets;
* members of containers (archive files) are extracted by the same dispatch, one level
  deeper, up to ``limits.max_archive_depth``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from fortemi.documents.detection import detect
from fortemi.documents.extraction._run import (
    AdapterError,
    Read,
    Run,
    TextSink,
    Unavailable,
    preview_of,
)
from fortemi.documents.extraction.archive import ArchiveAdapter
from fortemi.documents.extraction.base import Extracted, ExtractionStatus, Health, Limits
from fortemi.documents.extraction.image import NO_VISION, ImageAdapter
from fortemi.documents.extraction.mail import MailAdapter
from fortemi.documents.extraction.media import MediaAdapter
from fortemi.documents.extraction.office import OfficeAdapter
from fortemi.documents.extraction.pdf import NO_OCR, PdfAdapter
from fortemi.documents.extraction.services import (
    ImageReader,
    OllamaImageReader,
    Transcriber,
    WhisperTranscriber,
)
from fortemi.documents.extraction.structured import StructuredAdapter
from fortemi.documents.extraction.text import TextAdapter
from fortemi.documents.extraction.webpage import HtmlAdapter
from fortemi.documents.models import Detection, Extraction
from fortemi.documents.registry import TypeIndex, system_index

if TYPE_CHECKING:
    from fortemi.platform.settings import Settings

__all__ = ["Adapter", "LibraryExtractor"]

log = logging.getLogger(__name__)


class Adapter(Protocol):
    """One extraction family. ``read`` returns what it read or raises
    :class:`~fortemi.documents.extraction._run.Unreadable` /
    :class:`~fortemi.documents.extraction._run.Unavailable`."""

    name: str

    def read(
        self, data: bytes, *, filename: str | None, detection: Detection, run: Run
    ) -> Read: ...

    def health(self) -> Health: ...


def default_adapters(
    *,
    vision: ImageReader | None = None,
    ocr: ImageReader | None = None,
    transcriber: Transcriber | None = None,
    missing: Mapping[str, str] | None = None,
) -> dict[Extraction, Adapter]:
    """Every family's adapter; those that need a service get it, or answer SKIPPED
    (``missing``: why the "vision" or "ocr" service is absent, when not simply unset)."""
    why = dict(missing or {})
    media = MediaAdapter(transcriber)
    return {
        Extraction.TEXT: TextAdapter(),
        Extraction.STRUCTURED: StructuredAdapter(),
        Extraction.PDF: PdfAdapter(ocr, why_not=why.get("ocr", NO_OCR)),
        Extraction.OFFICE: OfficeAdapter(),
        Extraction.EMAIL: MailAdapter(),
        Extraction.HTML: HtmlAdapter(),
        Extraction.ARCHIVE: ArchiveAdapter(),
        Extraction.IMAGE: ImageAdapter(vision, why_not=why.get("vision", NO_VISION)),
        Extraction.AUDIO: media,
        Extraction.VIDEO: media,  # a Whisper server takes video containers for their sound
    }


class LibraryExtractor:
    """Extraction with the project's libraries, one adapter per family (see the module
    docstring for the contract). ``index`` detects the members of containers."""

    def __init__(
        self,
        adapters: Mapping[Extraction, Adapter] | None = None,
        *,
        index: TypeIndex | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._adapters = dict(default_adapters() if adapters is None else adapters)
        self._index = index or system_index()
        self._clock = clock

    @classmethod
    def from_settings(cls, settings: Settings) -> LibraryExtractor:
        """Every adapter; the vision, OCR and transcription ones configured from
        ``settings`` (a vision or OCR model needs ``OLLAMA_HOST``), or SKIPPING without."""
        timeout = settings.inference_timeout_seconds
        vision = ocr = None
        missing = {
            name: f"FORTEMI_{name.upper()}_MODEL names {model!r} but OLLAMA_HOST is unset"
            for name, model in (("vision", settings.vision_model), ("ocr", settings.ocr_model))
            if model and not settings.ollama_host
        }
        if settings.ollama_host and settings.vision_model:
            vision = OllamaImageReader(settings.ollama_host, settings.vision_model,
                                       timeout_seconds=timeout)  # fmt: skip
        if settings.ollama_host and settings.ocr_model:
            ocr = OllamaImageReader(settings.ollama_host, settings.ocr_model,
                                    timeout_seconds=timeout)  # fmt: skip
        transcriber = None
        if settings.transcription_url:
            transcriber = WhisperTranscriber(
                settings.transcription_url,
                settings.transcription_model,
                api_key=settings.transcription_api_key,
                timeout_seconds=timeout,
            )
        return cls(
            default_adapters(vision=vision, ocr=ocr, transcriber=transcriber, missing=missing)
        )

    def health(self) -> list[Health]:
        """One line per adapter (the media adapter answers for audio and video once)."""
        unique = {id(adapter): adapter for adapter in self._adapters.values()}
        return [adapter.health() for adapter in unique.values()]

    def extract(
        self, data: bytes, *, filename: str | None, detection: Detection, limits: Limits
    ) -> Extracted:
        run = Run(limits, self._clock, 0, self._member)
        return self._extract(data, filename, detection, run)

    def _member(self, name: str, data: bytes, run: Run) -> Extracted:
        detection = detect(self._index, name, None, data)
        return self._extract(data, name, detection, run)

    def _extract(
        self, data: bytes, filename: str | None, detection: Detection, run: Run
    ) -> Extracted:
        family = detection.type.extraction
        adapter = self._adapters.get(family)
        name = adapter.name if adapter is not None else family.value
        if not data:
            return _skipped(name, "empty: the file has no content")
        if family is Extraction.NONE:
            shown = detection.type.display_name
            return _skipped(name, f"no_text: {shown} files carry no text to extract")
        if adapter is None:
            return _skipped(name, f"unsupported: no {family.value} adapter in this build")
        try:
            read = adapter.read(data, filename=filename, detection=detection, run=run)
        except Unavailable as exc:
            return _skipped(name, exc.reason, exc.metadata)
        except AdapterError as exc:  # Unreadable: the file's own fault
            return _failed(name, exc.reason, exc.metadata)
        except (MemoryError, RecursionError) as exc:
            return _failed(name, f"too_complex: the file exhausted {type(exc).__name__}")
        except Exception as exc:
            # A library's bug on a hostile file must not end the worker: contained here,
            # logged with the type (never the content).
            log.warning("extraction adapter %s failed on a %s file", name, detection.type.name,
                        exc_info=True)  # fmt: skip
            return _failed(name, f"internal: {type(exc).__name__} while reading the file")
        return _done(name, read, detection, run.limits)


def _done(adapter: str, read: Read, detection: Detection, limits: Limits) -> Extracted:
    sink = TextSink(limits.max_text_bytes)
    sink.write(read.text)
    text = sink.text()
    metadata = dict(read.metadata)
    metadata["truncated"] = read.truncated or sink.truncated
    if detection.claimed is not None:
        metadata["claimed_type"] = detection.claimed
    return Extracted(
        ExtractionStatus.DONE,
        text=text,
        metadata=metadata,
        preview=preview_of(text),
        adapter=adapter,
        children=read.children,
    )


def _skipped(adapter: str, reason: str, metadata: dict[str, Any] | None = None) -> Extracted:
    return Extracted(ExtractionStatus.SKIPPED, metadata=metadata or {}, reason=reason,
                     adapter=adapter)  # fmt: skip


def _failed(adapter: str, reason: str, metadata: dict[str, Any] | None = None) -> Extracted:
    return Extracted(ExtractionStatus.FAILED, metadata=metadata or {}, reason=reason,
                     adapter=adapter)  # fmt: skip
