from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import AliasChoices, ValidationError

from fortemi.platform.settings import Settings
from tests.support.settings import settings_with

README = Path(__file__).resolve().parents[3] / "README.md"


def _variable(name: str) -> str:
    field = Settings.model_fields[name]
    alias = field.validation_alias
    if alias is None:
        return f"FORTEMI_{name.upper()}"
    # Every aliased setting names its one variable with AliasChoices (settings._alias).
    assert isinstance(alias, AliasChoices), alias
    choice = alias.choices[0]
    assert isinstance(choice, str), choice
    return choice


def test_every_setting_is_documented_in_the_readme_table() -> None:
    documented = set(re.findall(r"^\| `([A-Z0-9_]+)` \|", README.read_text(encoding="utf-8"), re.M))
    expected = {_variable(name) for name in Settings.model_fields}
    assert expected - documented == set(), "settings missing from README's table"
    assert documented - expected == set(), "README documents settings that do not exist"


def test_standard_variables_are_read_without_prefix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://db.example/fortemi")
    monkeypatch.setenv("OIDC_ISSUER", "https://auth.example/application/o/fortemi/")
    monkeypatch.setenv("OIDC_GROUPS_CLAIM", "ak_groups")
    monkeypatch.setenv("FORTEMI_PORT", "9000")
    settings = Settings(home=tmp_path)
    assert settings.database_url is not None
    assert settings.database_url.get_secret_value() == "postgresql://db.example/fortemi"
    assert settings.issuer == "https://auth.example/application/o/fortemi/"  # verbatim
    assert settings.oidc_groups_claim == "ak_groups"
    assert settings.port == 9000
    assert not settings.uses_local_issuer


def test_secrets_do_not_appear_in_the_settings_repr(tmp_path: Path) -> None:
    settings = settings_with(home=tmp_path, DATABASE_URL="postgresql://u:hunter2@db/x")
    assert "hunter2" not in repr(settings)


@pytest.mark.parametrize("algorithms", ["HS256", "none", "RS256,HS512", ""])
def test_symmetric_or_empty_algorithm_lists_are_refused(algorithms: str, tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        settings_with(home=tmp_path, OIDC_ALGORITHMS=algorithms)


def test_unknown_keyword_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        Settings(home=tmp_path, max_note_byte=10)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "issuer", ["http://idp.example.com", "ftp://idp.example.com", "idp.example.com"]
)
def test_an_issuer_that_is_not_https_off_loopback_is_a_configuration_error(
    issuer: str, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError, match="OIDC_ISSUER"):
        settings_with(home=tmp_path, OIDC_ISSUER=issuer)


@pytest.mark.parametrize("issuer", ["https://idp.example.com/app/o/x/", "http://127.0.0.1:9000"])
def test_https_or_loopback_issuers_are_accepted(issuer: str, tmp_path: Path) -> None:
    assert settings_with(home=tmp_path, OIDC_ISSUER=issuer).issuer == issuer


def test_answer_settings_are_read_from_the_environment_and_bounded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FORTEMI_ANSWER_MAX_TOKENS", "300")
    monkeypatch.setenv("FORTEMI_ANSWER_RETRY_MAX_TOKENS", "900")
    monkeypatch.setenv("FORTEMI_ANSWER_TEMPERATURE", "0.2")
    settings = Settings(home=tmp_path)
    assert (settings.answer_max_tokens, settings.answer_retry_max_tokens) == (300, 900)
    assert settings.answer_temperature == 0.2
    with pytest.raises(ValidationError, match="FORTEMI_ANSWER_RETRY_MAX_TOKENS"):
        Settings(home=tmp_path, answer_max_tokens=2000, answer_retry_max_tokens=1000)
    with pytest.raises(ValidationError):
        Settings(home=tmp_path, answer_temperature=-0.1)
