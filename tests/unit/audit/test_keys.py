"""The audit keyring: where the key comes from, how it is named, and what is refused."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from pydantic import SecretStr

from fortemi.auth.audit.keys import AuditKeyring, key_id
from fortemi.platform.settings import Settings
from tests.support.settings import settings_with

KEY = bytes(range(32))
OLD = bytes(range(32, 64))


def _b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def test_a_key_id_names_the_key_without_revealing_it() -> None:
    assert key_id(KEY) == key_id(bytes(KEY))
    assert key_id(KEY) != key_id(OLD)
    assert len(key_id(KEY)) == 16
    assert key_id(KEY) not in KEY.hex()


def test_the_configured_key_writes_and_retired_keys_only_verify(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path,
        audit_key=SecretStr(_b64(KEY)),
        audit_retired_keys=SecretStr(f"{_b64(OLD)}, "),
    )
    keyring = AuditKeyring.from_settings(settings)
    assert (keyring.current, keyring.current_id) == (KEY, key_id(KEY))
    assert keyring.get(key_id(OLD)) == OLD
    assert keyring.get("0" * 16) is None
    assert not (tmp_path / "keys").exists()


def test_without_a_configured_key_a_private_key_file_is_created_once(tmp_path: Path) -> None:
    first = AuditKeyring.from_settings(Settings(home=tmp_path))
    path = tmp_path / "keys" / "audit.key"
    assert path.read_bytes() == first.current
    assert path.stat().st_mode & 0o777 == 0o600
    assert AuditKeyring.from_settings(Settings(home=tmp_path)).current == first.current


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("audit_key", "not base64!", "FORTEMI_AUDIT_KEY must be base64"),
        ("audit_key", _b64(b"short"), "FORTEMI_AUDIT_KEY must decode to 32 bytes"),
        ("audit_retired_keys", f"{_b64(OLD)},{_b64(b'x' * 31)}", "FORTEMI_AUDIT_RETIRED_KEYS"),
    ],
)
def test_a_malformed_key_is_a_configuration_error_that_shows_no_key(
    tmp_path: Path, field: str, value: str, message: str
) -> None:
    settings = settings_with(home=tmp_path, **{field: SecretStr(value)})
    with pytest.raises(ValueError, match=message) as caught:
        AuditKeyring.from_settings(settings)
    assert value not in str(caught.value)
