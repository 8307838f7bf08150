"""``fortemi pke keygen | encrypt | decrypt | info | verify | publish``: MMPKE01 files.

Nothing here talks to a server but ``publish`` (:mod:`fortemi.crypto.publish`), which
sends a public key file to a server's key directory. Private keys stay in their
passphrase-sealed files; the passphrase comes from ``--passphrase-file``,
``FORTEMI_PKE_PASSPHRASE`` or the terminal. ``--to`` takes a public key file or an
address found among the ``*.pub`` files of the keyring folder (``--keyring``,
``FORTEMI_PKE_KEYRING``, default ``<FORTEMI_HOME>/pke``).
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from fortemi.crypto.header import Envelope
    from fortemi.crypto.keys import Keypair, PublicKey

__all__ = ["add_commands", "find_recipient", "keyring_folder", "passphrase", "replaced_on_success"]

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
PASSPHRASE_ENV = "FORTEMI_PKE_PASSPHRASE"  # noqa: S105 - a variable's name, not a secret
KEYRING_ENV = "FORTEMI_PKE_KEYRING"


def add_commands(commands: Commands) -> None:
    pke = commands.add_parser(
        "pke",
        help="encrypt files for recipients' addresses, decrypt, inspect (MMPKE01, offline)",
        description="End-to-end encryption in the MMPKE01 format (README: 'Encryption "
        "(MMPKE01)'). Works offline; private keys never leave their passphrase-sealed files.",
    )
    sub = pke.add_subparsers(dest="pke_command", required=True, metavar="<pke command>")
    keyring = argparse.ArgumentParser(add_help=False)
    keyring.add_argument(
        "--keyring",
        type=Path,
        help=f"folder of *.pub files to find --to addresses in ({KEYRING_ENV}, "
        "default <FORTEMI_HOME>/pke)",
    )
    secret = argparse.ArgumentParser(add_help=False)
    secret.add_argument(
        "--passphrase-file",
        type=Path,
        help=f"read the passphrase from this file's first line (or set {PASSPHRASE_ENV}); "
        "default: ask on the terminal",
    )

    keygen = sub.add_parser(
        "keygen",
        parents=[keyring, secret],
        help="make a keypair: NAME.key (sealed by a passphrase) and NAME.pub",
    )
    keygen.add_argument(
        "-o",
        "--output",
        type=Path,
        help="NAME of the files to write (default: <keyring>/id_mmpke); never overwritten",
    )
    keygen.set_defaults(run=_guarded(_keygen))

    encrypt = sub.add_parser(
        "encrypt", parents=[keyring], help="encrypt a file for one or more recipients"
    )
    encrypt.add_argument(
        "--to",
        action="append",
        required=True,
        metavar="ADDR|FILE",
        help="a recipient: an mm: address in the keyring, or a .pub file (repeatable)",
    )
    encrypt.add_argument("-o", "--output", type=Path, required=True, help="the file to write")
    encrypt.add_argument("file", type=Path, help="the file to encrypt")
    encrypt.set_defaults(run=_guarded(_encrypt))

    decrypt = sub.add_parser("decrypt", parents=[secret], help="decrypt a file with your key")
    decrypt.add_argument("--key", type=Path, required=True, help="your private key file")
    decrypt.add_argument(
        "-o",
        "--output",
        type=Path,
        help="the file to write (default: the original filename, in the current folder, "
        "never overwriting)",
    )
    decrypt.add_argument("file", type=Path, help="the MMPKE01 file")
    decrypt.set_defaults(run=_guarded(_decrypt))

    info = sub.add_parser("info", help="list a file's recipients and filename (no key needed)")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.add_argument("file", type=Path, help="the MMPKE01 file")
    info.set_defaults(run=_guarded(_info))

    verify = sub.add_parser(
        "verify",
        parents=[secret],
        help="check a file's structure, and with --key its integrity (exit 1 if not sound)",
    )
    verify.add_argument("--key", type=Path, help="a recipient's private key file")
    verify.add_argument("file", type=Path, help="the MMPKE01 file")
    verify.set_defaults(run=_guarded(_verify))

    published = sub.add_parser(
        "publish",
        help="publish a public key file on a server, for encryptFor (FORTEMI_URL, "
        "FORTEMI_TOKEN); prints its address",
    )
    published.add_argument("file", type=Path, help="the public key file (NAME.pub)")
    published.add_argument("--label", help="a label to tell your keys apart (e.g. laptop)")
    published.set_defaults(run=_guarded(_publish))


def _publish(args: argparse.Namespace) -> int:
    from fortemi.crypto.publish import run_publish

    return run_publish(args)


def _guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A refusal prints its message and stable reason and exits with 1, no traceback."""

    def run(args: argparse.Namespace) -> int:
        from fortemi.crypto.errors import PkeError

        try:
            return command(args)
        except PkeError as exc:
            raise SystemExit(
                f"fortemi pke {args.pke_command}: {exc.message} [{exc.reason}]"
            ) from None
        except OSError as exc:
            raise SystemExit(f"fortemi pke {args.pke_command}: {exc}") from None

    return run


# -- passphrases and paths ---------------------------------------------------------------------


def _passphrase(args: argparse.Namespace, *, confirm: bool) -> str:
    from fortemi.crypto.errors import WeakPassphrase

    if args.passphrase_file is not None:
        text = args.passphrase_file.read_text(encoding="utf-8")
        return text.splitlines()[0] if text else ""
    if PASSPHRASE_ENV in os.environ:
        return os.environ[PASSPHRASE_ENV]
    if not sys.stdin.isatty():
        raise SystemExit(
            f"fortemi pke {args.pke_command}: no terminal to ask the passphrase on: use "
            f"--passphrase-file or {PASSPHRASE_ENV}"
        )
    first = getpass.getpass("Passphrase: ")
    if confirm:
        from fortemi.crypto.keys import check_passphrase

        check_passphrase(first)  # refuse a short one before asking again
        if getpass.getpass("Passphrase again: ") != first:
            raise WeakPassphrase("passphrase_mismatch", "The two passphrases differ")
    return first


def _keyring(args: argparse.Namespace) -> Path:
    if args.keyring is not None:
        return Path(args.keyring)
    if KEYRING_ENV in os.environ:
        return Path(os.environ[KEYRING_ENV])
    if "FORTEMI_HOME" in os.environ:
        return Path(os.environ["FORTEMI_HOME"]) / "pke"
    import platformdirs

    return Path(platformdirs.user_data_dir("fortemi", appauthor=False)) / "pke"


@contextlib.contextmanager
def replaced_on_success(path: Path) -> Iterator[IO[bytes]]:
    """A temporary file beside ``path`` (mode 0600) that becomes ``path`` only on success,
    so a failure never leaves a partial file, nor plaintext of a file that failed later."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# -- the commands -----------------------------------------------------------------------------


def _keygen(args: argparse.Namespace) -> int:
    from fortemi.crypto.keys import (
        Keypair,
        check_passphrase,
        lock_private_key,
        write_private_key_file,
        write_public_key_file,
    )

    base = args.output if args.output is not None else _keyring(args) / "id_mmpke"
    private, public = base.with_name(base.name + ".key"), base.with_name(base.name + ".pub")
    for path in (private, public):
        if path.exists():
            raise SystemExit(f"fortemi pke keygen: {path} exists; a key file is never replaced")
    passphrase = _passphrase(args, confirm=True)
    check_passphrase(passphrase)
    keypair = Keypair.generate()
    locked = lock_private_key(keypair, passphrase)
    if args.output is None:
        base.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_private_key_file(private, locked)
    write_public_key_file(public, keypair.public)
    print(keypair.address)
    print(f"private key: {private} (keep it, and its passphrase; neither can be recovered)")
    print(f"public key:  {public} (give it, or the address, to whoever encrypts for you)")
    return 0


def _recipient(text: str, keyring: Path) -> PublicKey:
    from fortemi.crypto.addresses import ADDRESS_PREFIX, Address
    from fortemi.crypto.errors import PkeError
    from fortemi.crypto.keys import read_public_key_file

    if not text.startswith(ADDRESS_PREFIX):
        return read_public_key_file(Path(text))
    address = Address.parse(text)
    for path in sorted(keyring.glob("*.pub")) if keyring.is_dir() else []:
        try:
            key = read_public_key_file(path)
        except (PkeError, OSError):
            continue  # another file in the folder is no reason to refuse this recipient
        if key.address == address:
            return key
    raise SystemExit(
        f"fortemi pke encrypt: no public key for {address} in {keyring}: put its .pub file "
        "there, or pass the file to --to"
    )


def _encrypt(args: argparse.Namespace) -> int:
    from fortemi.crypto.envelope import seal_stream

    keyring = _keyring(args)
    # A recipient named twice (by address and by file) gets one entry.
    unique = list({key.address: key for key in (_recipient(t, keyring) for t in args.to)}.values())
    with args.file.open("rb") as source, replaced_on_success(args.output) as sink:
        seal_stream(source, sink, unique, filename=args.file.name)
    for key in unique:
        print(f"encrypted for {key.address}")
    return 0


def _decrypt(args: argparse.Namespace) -> int:
    from fortemi.crypto.envelope import Opener
    from fortemi.crypto.header import read_envelope
    from fortemi.crypto.keys import read_private_key_file

    keypair = read_private_key_file(args.key, _passphrase(args, confirm=False))
    with args.file.open("rb") as source:
        envelope = read_envelope(source)
        opener = Opener(envelope, keypair)
        output = args.output if args.output is not None else _default_output(envelope)
        with replaced_on_success(output) as sink:
            while block := source.read(1024 * 1024):
                sink.write(opener.update(block))
            sink.write(opener.finalize())
    print(f"decrypted to {output}")
    return 0


def _default_output(envelope: Envelope) -> Path:
    # The name inside the file is the sender's choice: only a plain name, in the current
    # folder, never replacing a file.
    name = Path(envelope.filename or "").name
    if name in {"", ".", ".."} or name != envelope.filename:
        raise SystemExit(
            f"fortemi pke decrypt: the file's original name {envelope.filename!r} is not a "
            "plain file name: choose one with -o"
        )
    path = Path(name)
    if path.exists():
        raise SystemExit(f"fortemi pke decrypt: {path} exists; choose another name with -o")
    return path


def _describe(envelope: Envelope, payload: int) -> dict[str, Any]:
    return {
        "format": "MMPKE01",
        "version": 1,
        "filename": envelope.filename,
        "chunk_size": envelope.chunk_size,
        "payload_bytes": payload,
        "recipients": [str(r.address) for r in envelope.recipients],
    }


def _structure(path: Path) -> tuple[Envelope, int]:
    """The preamble and the payload's length, which must be a whole number of chunks."""
    from fortemi.crypto.errors import MalformedFile
    from fortemi.crypto.header import TAG_SIZE, read_envelope

    with path.open("rb") as source:
        envelope = read_envelope(source)
        payload = path.stat().st_size - source.tell()
    sealed = envelope.chunk_size + TAG_SIZE
    last = payload % sealed or (sealed if payload else 0)
    if last < TAG_SIZE:
        raise MalformedFile(
            "truncated",
            f"The payload's {payload} bytes are not whole chunks of {sealed}: the file was "
            "cut short or extended",
        )
    return envelope, payload


def _info(args: argparse.Namespace) -> int:
    envelope, payload = _structure(args.file)
    described = _describe(envelope, payload)
    if args.json:
        print(json.dumps(described, ensure_ascii=False))
        return 0
    print(f"format:     MMPKE01 version {described['version']}")
    print(f"filename:   {envelope.filename if envelope.filename is not None else '(none)'}")
    print(f"payload:    {payload} bytes in chunks of {envelope.chunk_size}")
    print(f"recipients: {len(envelope.recipients)}")
    for recipient in envelope.recipients:
        print(f"  {recipient.address}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from fortemi.crypto.envelope import verify_stream
    from fortemi.crypto.keys import read_private_key_file

    envelope, _ = _structure(args.file)
    if args.key is None:
        print(f"structure sound: {len(envelope.recipients)} recipients (integrity needs --key)")
        return 0
    keypair: Keypair = read_private_key_file(args.key, _passphrase(args, confirm=False))
    with args.file.open("rb") as source:
        verify_stream(source, keypair)
    print(f"sound: structure and integrity checked with the key of {keypair.address}")
    return 0


# -- what other commands that encrypt or decrypt (``fortemi shard``) share ----------------------


def find_recipient(text: str, keyring: Path) -> PublicKey:
    """A recipient named by a public key file, or by an address found in ``keyring``."""
    return _recipient(text, keyring)


def keyring_folder(args: argparse.Namespace) -> Path:
    """The keyring folder: ``args.keyring``, ``FORTEMI_PKE_KEYRING`` or the default."""
    return _keyring(args)


def passphrase(args: argparse.Namespace) -> str:
    """The passphrase of a private key (``args.passphrase_file``, the environment or the
    terminal); ``args.pke_command`` names the command in messages."""
    return _passphrase(args, confirm=False)
