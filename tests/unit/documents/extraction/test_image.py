"""Images: EXIF provenance in decimal degrees, a description when a vision model is
configured (SKIPPED with the provenance kept otherwise), bombs and corrupt files refused."""

from __future__ import annotations

import struct
import zlib

from fortemi.documents.extraction import ExtractionStatus
from fortemi.documents.extraction.library import LibraryExtractor, default_adapters
from tests.support.documents import jpeg_with_exif, png_file
from tests.unit.documents.extraction._helpers import extract


class _Vision:
    model = "vision-test"

    def __init__(self) -> None:
        self.images: list[bytes] = []

    def read_image(self, image: bytes, prompt: str) -> str:
        self.images.append(image)
        return "A blue rectangle."


def test_exif_time_gps_and_camera_go_to_the_provenance() -> None:
    data = jpeg_with_exif(latitude=(33.0, 51.0, 54.0), north=False,
                          longitude=(151.0, 12.0, 36.0), east=True)  # fmt: skip

    found = extract(data, "photo.jpg")

    provenance = found.metadata["provenance"]
    assert provenance["captured_at"] == "2024-05-01T10:30:00"
    assert provenance["gps"] == {"latitude": -33.865, "longitude": 151.21}
    assert provenance["camera"] == {"make": "Canon", "model": "EOS 5D"}


def test_without_a_vision_model_an_image_is_skipped_and_keeps_its_provenance() -> None:
    found = extract(jpeg_with_exif(), "photo.jpg")

    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason is not None
    assert found.reason.startswith("vision_not_configured: ")
    assert found.metadata["provenance"]["camera"]["make"] == "Canon"
    assert (found.metadata["width"], found.metadata["height"]) == (32, 16)


def test_with_a_vision_model_the_description_is_the_text() -> None:
    vision = _Vision()
    extractor = LibraryExtractor(default_adapters(vision=vision))

    found = extract(png_file(), "diagram.png", extractor=extractor)

    assert (found.status, found.text) == (ExtractionStatus.DONE, "A blue rectangle.")
    assert found.metadata["described_by"] == "vision-test"
    assert vision.images == [png_file()]


def test_an_image_format_a_model_does_not_take_is_sent_as_png() -> None:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "green").save(buffer, format="BMP")
    vision = _Vision()

    extract(
        buffer.getvalue(), "icon.bmp", extractor=LibraryExtractor(default_adapters(vision=vision))
    )

    assert vision.images[0].startswith(b"\x89PNG")


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def test_a_decompression_bomb_image_is_refused_from_its_header() -> None:
    header = struct.pack(">IIBBBBB", 60_000, 60_000, 8, 0, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IEND", b"")

    found = extract(data, "bomb.png")

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("image_too_large: ")


def test_a_corrupt_image_fails_as_corrupt_image() -> None:
    found = extract(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10, "broken.png")

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("corrupt_image: ")


def test_an_svg_is_read_as_xml_text() -> None:
    found = extract(b'<svg xmlns="http://www.w3.org/2000/svg"><text>Label</text></svg>', "a.svg")

    assert (found.status, found.text, found.metadata["root"]) == (
        ExtractionStatus.DONE,
        "Label",
        "svg",
    )
