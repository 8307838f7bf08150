"""Sealed secrets open only with their key and for the row they were sealed for."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from fortemi.platform.sealing import SealingError, SecretBox
from fortemi.platform.settings import Settings


def test_a_sealed_secret_opens_only_for_its_context_and_key() -> None:
    box = SecretBox(b"k" * 32)
    sealed = box.seal(b"webhook secret", b"row-1")
    assert b"webhook secret" not in sealed
    assert box.open(sealed, b"row-1") == b"webhook secret"
    with pytest.raises(SealingError):
        box.open(sealed, b"row-2")  # copied onto another row
    with pytest.raises(SealingError):
        SecretBox(b"x" * 32).open(sealed, b"row-1")  # another key
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(SealingError):
        box.open(tampered, b"row-1")
    with pytest.raises(SealingError):
        box.open(b"\x02" + sealed[1:], b"row-1")  # unknown version


def test_sealing_twice_gives_different_ciphertexts() -> None:
    box = SecretBox(b"k" * 32)
    assert box.seal(b"same", b"ctx") != box.seal(b"same", b"ctx")


def test_the_data_directory_key_is_created_once_private_and_shared(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    first = SecretBox.from_settings(settings)
    sealed = first.seal(b"s", b"c")
    # A second process (a worker) with the same home opens what the first sealed.
    assert SecretBox.from_settings(settings).open(sealed, b"c") == b"s"
    key_file = tmp_path / "keys" / "secret.key"
    assert key_file.stat().st_mode & 0o777 == 0o600


def test_a_configured_key_is_used_and_a_malformed_one_refused(tmp_path: Path) -> None:
    key = base64.b64encode(b"z" * 32).decode()
    box = SecretBox.from_settings(Settings(home=tmp_path, secret_key=key))
    assert SecretBox(b"z" * 32).open(box.seal(b"s", b"c"), b"c") == b"s"
    assert not (tmp_path / "keys").exists()
    for bad in ("not base64!", base64.b64encode(b"short").decode()):
        with pytest.raises(ValueError, match="FORTEMI_SECRET_KEY"):
            SecretBox.from_settings(Settings(home=tmp_path, secret_key=bad))
