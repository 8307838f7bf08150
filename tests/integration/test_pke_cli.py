"""`fortemi pke` end to end, as a user runs it: the installed console script, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FORTEMI = str(Path(sys.executable).parent / "fortemi")
PASSPHRASE = "correct horse battery staple"


def _run(
    *args: str, cwd: Path, passphrase: str | None = PASSPHRASE
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORTEMI_")}
    env["FORTEMI_HOME"] = str(cwd / "home")
    if passphrase is not None:
        env["FORTEMI_PKE_PASSPHRASE"] = passphrase
    return subprocess.run(
        [FORTEMI, "pke", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alice (in the keyring, passphrase from the environment), bob (a file, passphrase from
    a file) and a 300 kB file encrypted for both."""
    folder = tmp_path_factory.mktemp("pke")
    alice = _ok(_run("keygen", cwd=folder)).splitlines()[0]
    (folder / "bob-passphrase").write_text("bob's long passphrase\n", encoding="utf-8")
    bob = _ok(
        _run(
            "keygen",
            "-o",
            "bob",
            "--passphrase-file",
            "bob-passphrase",
            cwd=folder,
            passphrase=None,
        )
    ).splitlines()[0]
    (folder / "addresses").write_text(f"{alice}\n{bob}\n", encoding="utf-8")
    (folder / "report.bin").write_bytes(os.urandom(300_000))
    _ok(
        _run(
            "encrypt",
            "--to",
            alice,
            "--to",
            "bob.pub",
            "-o",
            "report.mmpke",
            "report.bin",
            cwd=folder,
        )
    )
    return folder


def _addresses(folder: Path) -> list[str]:
    return (folder / "addresses").read_text(encoding="utf-8").split()


def test_keygen_writes_a_private_key_only_its_owner_reads_and_a_public_key(folder: Path) -> None:
    alice, bob = _addresses(folder)
    private = folder / "home" / "pke" / "id_mmpke.key"
    assert private.stat().st_mode & 0o777 == 0o600
    assert json.loads((folder / "home" / "pke" / "id_mmpke.pub").read_text())["address"] == alice
    assert json.loads((folder / "bob.pub").read_text())["address"] == bob
    assert (folder / "bob.key").stat().st_mode & 0o777 == 0o600


def test_keygen_never_replaces_a_key(folder: Path) -> None:
    before = (folder / "bob.key").read_bytes()
    result = _run("keygen", "-o", "bob", cwd=folder)
    assert result.returncode == 1
    assert "exists" in result.stderr
    assert (folder / "bob.key").read_bytes() == before


def test_keygen_refuses_a_short_passphrase(folder: Path) -> None:
    result = _run("keygen", "-o", "carol", cwd=folder, passphrase="too short")
    assert result.returncode == 1
    assert "[passphrase_too_short]" in result.stderr
    assert not (folder / "carol.key").exists()


def test_keygen_without_a_terminal_or_passphrase_says_how_to_give_one(folder: Path) -> None:
    result = _run("keygen", "-o", "dave", cwd=folder, passphrase=None)
    assert result.returncode == 1
    assert "--passphrase-file" in result.stderr
    assert not (folder / "dave.key").exists()


def test_info_lists_the_recipients_and_filename_without_a_key(folder: Path) -> None:
    described = json.loads(_ok(_run("info", "--json", "report.mmpke", cwd=folder)))
    assert described["recipients"] == _addresses(folder)
    assert described["filename"] == "report.bin"
    text = _ok(_run("info", "report.mmpke", cwd=folder))
    assert all(address in text for address in _addresses(folder))


def test_each_recipient_decrypts_the_original(folder: Path) -> None:
    out = folder / "alice-out"
    out.mkdir()
    _ok(_run("decrypt", "--key", "../home/pke/id_mmpke.key", "../report.mmpke", cwd=out))
    assert (out / "report.bin").read_bytes() == (folder / "report.bin").read_bytes()
    _ok(
        _run(
            "decrypt",
            "--key",
            "bob.key",
            "--passphrase-file",
            "bob-passphrase",
            "-o",
            "bob-copy.bin",
            "report.mmpke",
            cwd=folder,
            passphrase=None,
        )
    )
    assert (folder / "bob-copy.bin").read_bytes() == (folder / "report.bin").read_bytes()


def test_decrypt_never_replaces_a_file_with_the_original_name(folder: Path) -> None:
    result = _run("decrypt", "--key", "home/pke/id_mmpke.key", "report.mmpke", cwd=folder)
    assert result.returncode == 1
    assert "report.bin exists" in result.stderr


def test_a_wrong_passphrase_is_refused(folder: Path) -> None:
    result = _run(
        "decrypt",
        "--key",
        "bob.key",
        "-o",
        "x.bin",
        "report.mmpke",
        cwd=folder,
        passphrase="not bob's passphrase",
    )
    assert result.returncode == 1
    assert "[wrong_passphrase]" in result.stderr
    assert not (folder / "x.bin").exists()


def test_a_key_that_is_not_a_recipient_is_refused(folder: Path) -> None:
    alice = _addresses(folder)[0]
    _ok(_run("encrypt", "--to", alice, "-o", "for-alice.mmpke", "report.bin", cwd=folder))
    result = _run(
        "decrypt",
        "--key",
        "bob.key",
        "-o",
        "y.bin",
        "for-alice.mmpke",
        cwd=folder,
        passphrase="bob's long passphrase",
    )
    assert result.returncode == 1
    assert "[not_a_recipient]" in result.stderr
    assert not (folder / "y.bin").exists()


def test_a_changed_byte_fails_verify_and_decrypt_leaving_no_output(folder: Path) -> None:
    tampered = bytearray((folder / "report.mmpke").read_bytes())
    tampered[-100_000] ^= 0x01
    (folder / "tampered.mmpke").write_bytes(bytes(tampered))
    # Its structure is sound: only the key can tell.
    _ok(_run("verify", "tampered.mmpke", cwd=folder))
    result = _run("verify", "--key", "home/pke/id_mmpke.key", "tampered.mmpke", cwd=folder)
    assert result.returncode == 1
    assert "[integrity]" in result.stderr
    result = _run(
        "decrypt", "--key", "home/pke/id_mmpke.key", "-o", "z.bin", "tampered.mmpke", cwd=folder
    )
    assert result.returncode == 1
    assert "[integrity]" in result.stderr
    assert not (folder / "z.bin").exists()
    assert not list(folder.glob(".z.bin.*"))


def test_verify_with_a_key_checks_integrity(folder: Path) -> None:
    out = _ok(_run("verify", "--key", "home/pke/id_mmpke.key", "report.mmpke", cwd=folder))
    assert "integrity checked" in out


def test_verify_refuses_a_payload_that_is_not_whole_chunks(folder: Path) -> None:
    data = (folder / "report.mmpke").read_bytes()
    payload_start = 12 + int.from_bytes(data[8:12], "little")
    # Four whole chunks and 8 bytes: too short for the tag of a fifth.
    (folder / "cut.mmpke").write_bytes(data[: payload_start + 4 * (65536 + 16) + 8])
    result = _run("verify", "cut.mmpke", cwd=folder)
    assert result.returncode == 1
    assert "[truncated]" in result.stderr


def test_encrypt_refuses_a_bad_address_with_its_reason(folder: Path) -> None:
    alice = _addresses(folder)[0]
    result = _run("encrypt", "--to", alice[:-1] + "2", "-o", "w.mmpke", "report.bin", cwd=folder)
    assert result.returncode == 1
    assert "[address_checksum]" in result.stderr
    assert not (folder / "w.mmpke").exists()


def test_encrypt_to_an_address_outside_the_keyring_says_where_it_looked(folder: Path) -> None:
    bob = _addresses(folder)[1]
    result = _run("encrypt", "--to", bob, "-o", "v.mmpke", "report.bin", cwd=folder)
    assert result.returncode == 1
    assert "no public key for" in result.stderr
    assert str(folder / "home" / "pke") in result.stderr


def _keygen_on_a_terminal(folder: Path, name: str, answers: list[str]) -> tuple[int, str]:
    """Run keygen with a pseudo-terminal as its only terminal, typing each answer when
    asked (getpass flushes what was typed before its prompt)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORTEMI_")}
    env["FORTEMI_HOME"] = str(folder / "home")
    controller, terminal = os.openpty()
    process = subprocess.Popen(
        [FORTEMI, "pke", "keygen", "-o", name],
        cwd=folder,
        env=env,
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,  # no controlling terminal: getpass uses stdin, the pty
    )
    os.close(terminal)
    seen = b""
    pending = list(answers)
    try:
        while True:
            try:
                data = os.read(controller, 1024)
            except OSError:  # EIO: the program exited and closed the terminal
                break
            if not data:
                break
            seen += data
            # Answer each prompt once, when it is complete (it ends with ": ").
            prompts = seen.count(b"Passphrase")
            if pending and seen.endswith(b": ") and prompts > len(answers) - len(pending):
                os.write(controller, pending.pop(0).encode() + b"\n")
    finally:
        os.close(controller)
    return process.wait(), seen.decode(errors="replace")


def test_keygen_asks_the_passphrase_twice_on_a_terminal(folder: Path) -> None:
    code, output = _keygen_on_a_terminal(folder, "erin", [PASSPHRASE, PASSPHRASE])
    assert code == 0, output
    assert output.count("Passphrase") == 2
    assert (folder / "erin.key").exists()
    assert PASSPHRASE not in output  # not echoed


def test_keygen_refuses_two_different_passphrases_on_a_terminal(folder: Path) -> None:
    code, output = _keygen_on_a_terminal(folder, "frank", [PASSPHRASE, PASSPHRASE + "?"])
    assert code == 1
    assert "[passphrase_mismatch]" in output
    assert not (folder / "frank.key").exists()
