"""PDF text, page by page in batches, through pypdfium2 (PDFium, Chrome's PDF engine).

Why PDFium over pypdf: on the benchmark's 200-page file it read the text 2.7 to 5.1 times
as fast (``benchmarks/documents.py`` prints both), it is the engine browsers trust with
hostile PDFs, and it renders pages, which OCR needs. PDFium is not thread-safe: every
call into it holds :data:`_PDFIUM` (extraction runs in worker threads).

Bounds: at most ``max_pdf_pages`` pages are read, ``pdf_page_batch`` at a time with the
time budget checked between batches, and reading stops once the text limit is reached.
A page without a text layer (a scan) is rendered and read by the OCR model when one is
configured (outside the lock: the lock guards PDFium, not the network); a PDF whose pages
are all scans, with no OCR model, is ``SKIPPED`` saying so.
"""

from __future__ import annotations

import datetime as dt
import io
import threading
from typing import Any

from fortemi.documents.extraction._run import Read, Run, TextSink, Unavailable, Unreadable
from fortemi.documents.extraction.base import Health
from fortemi.documents.extraction.services import ImageReader
from fortemi.documents.models import Detection

__all__ = ["NO_OCR", "OCR_PROMPT", "PdfAdapter"]

NO_OCR = "no OCR model configured (FORTEMI_OCR_MODEL)"

_PDFIUM = threading.Lock()
OCR_PROMPT = (
    "Transcribe all text in this scanned page exactly as written, in reading order. "
    "Answer with the text only."
)
_RENDER_SCALE = 2.0  # 144 dpi: small print stays legible to an OCR model
_META = {"Title": "title", "Author": "author", "Subject": "subject", "Creator": "creator",
         "Producer": "producer", "CreationDate": "created"}  # fmt: skip


class PdfAdapter:
    name = "pdf"

    def __init__(self, ocr: ImageReader | None = None, *, why_not: str = NO_OCR) -> None:
        self._ocr = ocr
        self._why_not = why_not  # what is missing when ``ocr`` is None

    def health(self) -> Health:
        detail = "pypdfium2" + (
            f"; OCR of scanned pages with {self._ocr.model}"
            if self._ocr
            else f"; {self._why_not}: scanned pages are skipped"
        )
        return Health(self.name, True, detail)

    def read(self, data: bytes, *, filename: str | None, detection: Detection, run: Run) -> Read:
        import pypdfium2 as pdfium

        sink = TextSink(run.limits.max_text_bytes)
        scanned: list[int] = []
        ocr_pages = 0
        with _PDFIUM:
            try:
                document = pdfium.PdfDocument(data)
            except pdfium.PdfiumError as exc:
                code = "encrypted_pdf" if "password" in str(exc).lower() else "corrupt_pdf"
                raise Unreadable(code, f"PDFium cannot open it ({exc})") from exc
            pages = len(document)
            metadata = _metadata(document)
            if not pages:
                document.close()
                raise Unreadable("corrupt_pdf", "the PDF has no pages")
        wanted = min(pages, run.limits.max_pdf_pages)
        read = 0
        try:
            for start in range(0, wanted, run.limits.pdf_page_batch):
                run.check(f"page {start + 1} of {pages}")
                stop = min(start + run.limits.pdf_page_batch, wanted)
                with _PDFIUM:
                    batch = [_page(document, i, self._ocr is not None) for i in range(start, stop)]
                for index, (text, image) in zip(range(start, stop), batch, strict=True):
                    read = index + 1
                    if image is not None and self._ocr is not None:
                        run.check(f"OCR of page {index + 1}")
                        text = self._ocr.read_image(image, OCR_PROMPT)
                        ocr_pages += 1
                    elif not text.strip():
                        scanned.append(index + 1)
                    text = text.replace("\r\n", "\n").strip()  # PDFium ends lines with CRLF
                    if text and not sink.write(text + "\n\n"):
                        break
                if sink.full:
                    break
        finally:
            with _PDFIUM:
                document.close()
        if scanned and len(scanned) == read and not ocr_pages:
            raise Unavailable(
                "ocr_not_configured",
                f"the PDF's {len(scanned)} pages have no text layer and {self._why_not}",
                {"pages": pages},
            )
        metadata.update(pages=pages, pages_read=read, ocr_pages=ocr_pages,
                        pages_without_text=scanned[:100])  # fmt: skip
        truncated = sink.truncated or read < pages
        return Read(sink.text(), metadata, truncated=truncated)


def _page(document: Any, index: int, render: bool) -> tuple[str, bytes | None]:
    """A page's text, and its PNG when it has none and ``render`` (for OCR)."""
    import pypdfium2 as pdfium

    try:
        page = document[index]
    except pdfium.PdfiumError as exc:
        raise Unreadable("corrupt_pdf", f"page {index + 1} cannot be loaded ({exc})") from exc
    try:
        textpage = page.get_textpage()
        try:
            text = str(textpage.get_text_bounded())
        finally:
            textpage.close()
        if text.strip() or not render:
            return text, None
        bitmap = page.render(scale=_RENDER_SCALE)
        try:
            buffer = io.BytesIO()
            bitmap.to_pil().save(buffer, format="PNG")
            return "", buffer.getvalue()
        finally:
            bitmap.close()
    finally:
        page.close()


def _metadata(document: Any) -> dict[str, Any]:
    try:
        raw = document.get_metadata_dict(skip_empty=True)
    except Exception:  # a broken info dictionary is no reason to lose the text
        return {}
    found = {_META[k]: str(v) for k, v in raw.items() if k in _META}
    if "created" in found:
        found["created"] = _pdf_date(found["created"])
    return found


def _pdf_date(value: str) -> str:
    """A PDF date (``D:YYYYMMDDHHmmSS`` and a zone) as ISO 8601, or as it is."""
    digits = value.removeprefix("D:")
    try:
        moment = dt.datetime.strptime(digits[:14], "%Y%m%d%H%M%S")
    except ValueError:
        return value
    zone = digits[14:].replace("'", "")
    if zone in ("Z", ""):
        return moment.isoformat() + ("Z" if zone else "")
    return moment.isoformat() + (f"{zone[:3]}:{zone[3:5]}" if len(zone) >= 5 else zone)
