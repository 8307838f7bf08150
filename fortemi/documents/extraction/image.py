"""Images: EXIF provenance (when taken, where, with what camera) through Pillow, and a
description by an Ollama vision model when one is configured.

``metadata["provenance"]``: ``captured_at`` (EXIF DateTimeOriginal, else DateTime, as
ISO 8601 without a zone: EXIF has none unless OffsetTimeOriginal says it), ``gps``
(latitude and longitude in decimal degrees, south and west negative; altitude in metres)
and ``camera`` (make, model). Without a vision model the image is ``SKIPPED`` with the
reason, its provenance kept. Images past Pillow's decompression-bomb bound (about 179
million pixels) are refused. SVG is XML: its text is read as XML.
"""

from __future__ import annotations

import datetime as dt
import io
import warnings
from typing import Any

from fortemi.documents.extraction._run import Read, Run, Unavailable, Unreadable
from fortemi.documents.extraction.base import Health
from fortemi.documents.extraction.services import ImageReader
from fortemi.documents.extraction.structured import StructuredAdapter
from fortemi.documents.models import Detection

__all__ = ["DESCRIBE_PROMPT", "NO_VISION", "ImageAdapter", "provenance"]

NO_VISION = "no vision model configured (FORTEMI_VISION_MODEL)"

DESCRIBE_PROMPT = (
    "Describe this image for a search index: what it shows, any text it contains "
    "(transcribed), and its kind (photo, diagram, screenshot, chart). Be factual and brief."
)
_EXIF_IFD, _GPS_IFD = 0x8769, 0x8825
_DATETIME, _MAKE, _MODEL = 306, 271, 272
_DATETIME_ORIGINAL, _OFFSET_ORIGINAL = 36867, 36881
_SENT_FORMATS = {"JPEG", "PNG", "WEBP"}  # what vision models take as they are
_DECODE_PIXELS = 40_000_000


def _degrees(value: Any, ref: Any) -> float | None:
    try:
        d, m, s = (float(part) for part in value)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    degrees = d + m / 60 + s / 3600
    return round(-degrees if str(ref).upper() in ("S", "W") else degrees, 7)


def _when(exif: Any, sub: Any) -> str | None:
    raw = sub.get(_DATETIME_ORIGINAL) or exif.get(_DATETIME)
    if not raw:
        return None
    try:
        moment = dt.datetime.strptime(str(raw).strip("\x00 "), "%Y:%m:%d %H:%M:%S")
    except ValueError:
        return None
    offset = sub.get(_OFFSET_ORIGINAL)
    return moment.isoformat() + (str(offset).strip("\x00 ") if offset else "")


def provenance(image: Any) -> dict[str, Any]:
    """What the image's EXIF says of its origin (empty when it says nothing)."""
    exif = image.getexif()
    sub, gps = exif.get_ifd(_EXIF_IFD), exif.get_ifd(_GPS_IFD)
    found: dict[str, Any] = {}
    if (when := _when(exif, sub)) is not None:
        found["captured_at"] = when
    latitude, longitude = _degrees(gps.get(2), gps.get(1)), _degrees(gps.get(4), gps.get(3))
    if latitude is not None and longitude is not None:
        found["gps"] = {"latitude": latitude, "longitude": longitude}
        try:
            altitude = float(gps[6])
            found["gps"]["altitude"] = round(
                -altitude if gps.get(5) in (1, b"\x01") else altitude, 2
            )
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            pass
    camera = {k: str(exif[t]).strip("\x00 ") for k, t in (("make", _MAKE), ("model", _MODEL))
              if exif.get(t)}  # fmt: skip
    if camera:
        found["camera"] = camera
    return found


class ImageAdapter:
    name = "image"

    def __init__(self, vision: ImageReader | None = None, *, why_not: str = NO_VISION) -> None:
        self._vision = vision
        self._why_not = why_not  # what is missing when ``vision`` is None
        self._xml = StructuredAdapter()

    def health(self) -> Health:
        if self._vision is None:
            detail = f"{self._why_not}; images keep their EXIF provenance only"
            return Health(self.name, False, detail)
        return Health(self.name, True, f"Pillow; descriptions by {self._vision.model}")

    def read(self, data: bytes, *, filename: str | None, detection: Detection, run: Run) -> Read:
        if not detection.type.binary:  # SVG
            return self._xml.read(data, filename=filename, detection=detection, run=run)
        from PIL import Image, UnidentifiedImageError

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                image = Image.open(io.BytesIO(data))
                # Decoding checks the pixels too (a truncated file fails here), but costs
                # width x height x bands of memory: larger images are checked by their
                # header only and sent to the vision model as they are.
                if image.width * image.height <= _DECODE_PIXELS:
                    image.load()
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise Unreadable("image_too_large", str(exc)) from exc
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
            raise Unreadable("corrupt_image", f"Pillow cannot read it ({exc})") from exc
        metadata: dict[str, Any] = {"width": image.width, "height": image.height,
                                    "format": image.format, "mode": image.mode}  # fmt: skip
        try:
            metadata["provenance"] = provenance(image)
        except Exception:  # a broken EXIF block is no reason to lose the image
            metadata["provenance"] = {}
        if self._vision is None:
            raise Unavailable("vision_not_configured", f"{self._why_not} to describe images",
                              metadata)  # fmt: skip
        run.check("before the description")
        if image.format not in _SENT_FORMATS and image.width * image.height > _DECODE_PIXELS:
            raise Unreadable(
                "image_too_large",
                f"a {image.format} image of {image.width}x{image.height} pixels is too large "
                "to convert for the vision model; save it as JPEG or PNG",
                metadata,
            )
        try:
            description = self._vision.read_image(_sendable(image, data), DESCRIBE_PROMPT)
        except Unavailable as exc:  # the service's failure; what Pillow read is kept
            raise Unavailable(exc.code, exc.detail, metadata) from exc
        metadata["described_by"] = self._vision.model
        return Read(description, metadata)


def _sendable(image: Any, data: bytes) -> bytes:
    """The bytes a vision model takes: the file itself when JPEG, PNG or WebP, else PNG."""
    if image.format in _SENT_FORMATS:
        return data
    buffer = io.BytesIO()
    image.convert("RGBA" if "A" in image.mode else "RGB").save(buffer, format="PNG")
    return buffer.getvalue()
