"""Log lines: JSON objects on request, each with the request id it was logged for."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest

from fortemi.platform import logs


@pytest.fixture
def stderr() -> Iterator[io.StringIO]:
    """Where configure_logging's handler writes; the root logger is restored afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    buffer = io.StringIO()
    yield buffer
    root.handlers[:], level = saved
    root.setLevel(level)


def test_json_format_writes_one_object_per_line_with_the_request_id(stderr: io.StringIO) -> None:
    logs.configure_logging("INFO", "json", stream=stderr)
    log = logging.getLogger("fortemi.test")

    async def request(request_id: str) -> None:
        logs.request_id.set(request_id)
        await asyncio.sleep(0)
        log.warning("note %s refused", "n1")

    async def both() -> None:
        await asyncio.gather(request("req-aaaa1111"), request("req-bbbb2222"))

    asyncio.run(both())
    log.info("outside any request")

    lines = [json.loads(line) for line in stderr.getvalue().splitlines()]
    assert [(line["request_id"], line["message"], line["level"]) for line in lines] == [
        ("req-aaaa1111", "note n1 refused", "WARNING"),
        ("req-bbbb2222", "note n1 refused", "WARNING"),
        ("-", "outside any request", "INFO"),
    ]
    assert {line["logger"] for line in lines} == {"fortemi.test"}
    assert all("time" in line for line in lines)


def test_json_format_keeps_the_traceback_in_the_object(stderr: io.StringIO) -> None:
    logs.configure_logging("INFO", "json", stream=stderr)
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("fortemi.test").exception("failed")
    (line,) = [json.loads(text) for text in stderr.getvalue().splitlines()]
    assert line["message"] == "failed"
    assert "ValueError: boom" in line["exc_info"]


def test_text_format_shows_the_request_id_in_brackets(stderr: io.StringIO) -> None:
    logs.configure_logging("DEBUG", "text", stream=stderr)
    token = logs.request_id.set("req-cccc3333")
    try:
        logging.getLogger("fortemi.test").debug("hello")
    finally:
        logs.request_id.reset(token)
    assert "DEBUG fortemi.test [req-cccc3333]: hello" in stderr.getvalue()
