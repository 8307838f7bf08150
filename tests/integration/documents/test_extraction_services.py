"""The service-backed adapters against doubles of Ollama and a Whisper server over real
sockets, configured through Settings as a deployment would: image descriptions, OCR of
scanned PDF pages, transcription; and SKIPPED, never FAILED, when a service fails."""

from __future__ import annotations

import base64
from typing import Any

from fortemi.documents.detection import detect
from fortemi.documents.extraction import Extracted, ExtractionStatus, Limits
from fortemi.documents.extraction.library import LibraryExtractor
from fortemi.documents.registry import system_index
from fortemi.platform.settings import Settings
from tests.integration.documents.conftest import WHISPER_KEY
from tests.support.documents import jpeg_with_exif, png_file, scanned_pdf_file
from tests.support.ollama_double import OllamaDouble
from tests.support.whisper_double import WhisperDouble

WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(200)


def _settings(**values: Any) -> Settings:
    return Settings.model_validate({"inference_timeout_seconds": 10, **values})


def _extract(extractor: LibraryExtractor, data: bytes, filename: str) -> Extracted:
    detection = detect(system_index(), filename, None, data)
    return extractor.extract(data, filename=filename, detection=detection, limits=Limits())


def _generations(double: OllamaDouble, model: str) -> list[dict[str, Any]]:
    return [b for path, b in double.requests if path == "/api/generate" and b["model"] == model]


def test_an_image_is_described_by_the_configured_ollama_vision_model(
    ollama_double: OllamaDouble,
) -> None:
    extractor = LibraryExtractor.from_settings(
        _settings(OLLAMA_HOST=ollama_double.url, vision_model="llava-test")
    )
    photo = jpeg_with_exif()

    found = _extract(extractor, photo, "photo.jpg")

    assert found.status is ExtractionStatus.DONE
    assert found.text == f"an image of {len(photo)} bytes"
    assert found.metadata["described_by"] == "llava-test"
    assert found.metadata["provenance"]["camera"] == {"make": "Canon", "model": "EOS 5D"}
    [request] = _generations(ollama_double, "llava-test")
    assert base64.b64decode(request["images"][0]) == photo
    assert "Describe this image" in request["prompt"]


def test_a_scanned_pdf_page_is_read_by_the_configured_ocr_model(
    ollama_double: OllamaDouble,
) -> None:
    ollama_double.replies["ocr-test"] = "INVOICE 2041 total 99 EUR"
    extractor = LibraryExtractor.from_settings(
        _settings(OLLAMA_HOST=ollama_double.url, ocr_model="ocr-test")
    )

    found = _extract(extractor, scanned_pdf_file(2), "scan.pdf")

    assert found.status is ExtractionStatus.DONE
    assert found.text == "INVOICE 2041 total 99 EUR\n\nINVOICE 2041 total 99 EUR\n\n"
    assert found.metadata["ocr_pages"] == 2
    requests = _generations(ollama_double, "ocr-test")
    assert len(requests) == 2
    assert base64.b64decode(requests[0]["images"][0]).startswith(b"\x89PNG")


def test_a_vision_model_the_server_lacks_skips_the_image_with_the_servers_reason(
    ollama_double: OllamaDouble,
) -> None:
    extractor = LibraryExtractor.from_settings(
        _settings(OLLAMA_HOST=ollama_double.url, vision_model="not-pulled")
    )

    found = _extract(extractor, png_file(), "chart.png")

    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason is not None
    assert found.reason.startswith("service_error: Ollama answered 404")
    assert found.metadata["width"] == 64


def test_an_unreachable_ollama_skips_the_image_rather_than_failing_it() -> None:
    extractor = LibraryExtractor.from_settings(
        _settings(OLLAMA_HOST="http://127.0.0.1:9", vision_model="llava-test")
    )

    found = _extract(extractor, png_file(), "chart.png")

    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason is not None
    assert found.reason.startswith("service_unavailable: ")


def test_audio_is_transcribed_by_the_whisper_server_with_its_key(
    whisper_double: WhisperDouble,
) -> None:
    extractor = LibraryExtractor.from_settings(
        _settings(
            transcription_url=whisper_double.url,
            transcription_model="whisper-small",
            transcription_api_key=WHISPER_KEY,
        )
    )

    found = _extract(extractor, WAV, "standup.wav")

    assert found.status is ExtractionStatus.DONE
    assert found.text == f"transcript of standup.wav ({len(WAV)} bytes)"
    assert found.metadata == {"language": "en", "duration": 1.5,
                              "transcribed_by": "whisper-small", "truncated": False}  # fmt: skip
    path, request = whisper_double.requests[-1]
    assert path == "/v1/audio/transcriptions"
    assert request["fields"]["model"] == "whisper-small"
    assert request["file"] == ("standup.wav", "audio/wav", len(WAV))
    assert request["authorization"] == f"Bearer {WHISPER_KEY}"


def test_a_wrong_transcription_key_skips_the_audio_with_the_servers_answer(
    whisper_double: WhisperDouble,
) -> None:
    extractor = LibraryExtractor.from_settings(
        _settings(transcription_url=whisper_double.url, transcription_api_key="wrong")
    )

    found = _extract(extractor, WAV, "standup.wav")

    assert found.status is ExtractionStatus.SKIPPED
    assert found.reason is not None
    assert found.reason.startswith("service_error: the transcription server answered 401")
    assert "wrong" not in found.reason


def test_a_failing_or_garbled_transcription_server_skips_the_audio(
    whisper_double: WhisperDouble,
) -> None:
    reasons = []
    for model in ("fail-server", "fail-garbage"):
        extractor = LibraryExtractor.from_settings(
            _settings(
                transcription_url=whisper_double.url,
                transcription_model=model,
                transcription_api_key=WHISPER_KEY,
            )
        )
        found = _extract(extractor, WAV, "standup.wav")
        assert found.status is ExtractionStatus.SKIPPED
        reasons.append(found.reason)

    assert reasons == [
        'service_error: the transcription server answered 500: {"error":{"message":"CUDA out of memory"}}',
        "service_error: the transcription server's answer has no text",
    ]


def test_the_health_of_configured_service_adapters_names_their_models(
    ollama_double: OllamaDouble, whisper_double: WhisperDouble
) -> None:
    extractor = LibraryExtractor.from_settings(
        _settings(
            OLLAMA_HOST=ollama_double.url,
            vision_model="llava-test",
            ocr_model="ocr-test",
            transcription_url=whisper_double.url,
        )
    )

    health = {h.adapter: h for h in extractor.health()}

    assert all(h.healthy for h in health.values())
    assert "llava-test" in health["image"].detail
    assert "ocr-test" in health["pdf"].detail
