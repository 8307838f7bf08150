"""Document type detection accuracy on a labelled set of real and generated files, and
extraction throughput.

``python -m benchmarks.documents [--part detection|extraction|all] [--data DIR]
[--per-label N] [--seed S] [--pages N] [--repeat N]``

``--data``: the folder the extraction files are generated into (and read from: PDF, DOCX,
XLSX and HTML files put there are measured too); default a temporary folder. The
extraction part is described in :mod:`benchmarks._extraction`.

The set: files shipped inside the packages installed beside Fortemi (its virtualenv's
site-packages: Python sources and stubs, C headers and sources, Cython, Fortran, SQL,
JSON, CSV, YAML, TOML, HTML, CSS, PNG, NumPy arrays, compressed files, shared objects,
bytecode, package metadata ...), at most ``--per-label`` of each label, drawn with a fixed
seed, plus files generated here with the standard library for the formats no package
ships (PDF, Office and OpenDocument containers, tar, xz, WAVE, SQLite, GIF, BMP, JPEG,
e-mail, calendar, shell scripts with #!, Dockerfiles, ...).

Labels come from the file's provenance, never from the detector: a package file is
labelled by a table in this script from its name (extension, or the whole name for
``METADATA``-like files), and kept only when a parser from the standard library accepts
it as that format where one exists (``ast`` for Python, ``json``, ``tomllib``, ``csv``,
``xml.etree``, ``gzip``, ``bz2``, ``zipfile``, ``yaml``); a generated file is labelled by
what generated it.

Three runs of the cascade over the same set: with the file name (what an upload gives),
with the name and the MIME type ``mimetypes`` guesses from it (what a browser declares),
and on the content alone (no name, no MIME). Each prints accuracy, the methods that
decided, and the confusions (label -> detected, count).
"""

from __future__ import annotations

import argparse
import ast
import bz2
import collections
import csv
import dataclasses
import email.message
import gzip
import io
import json
import lzma
import mimetypes
import platform
import random
import sqlite3
import struct
import sysconfig
import tarfile
import tempfile
import tomllib
import wave
import xml.etree.ElementTree as ET
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from benchmarks._common import _git_commit, print_setup, table
from benchmarks._extraction import extraction_throughput
from fortemi.documents.detection import PREFIX_BYTES, detect
from fortemi.documents.registry import system_index, system_types


@dataclass(frozen=True)
class Sample:
    filename: str
    content: bytes  # the first bytes the detector reads (a prefix)
    label: str
    origin: str  # "package" or "generated"


def _text(data: bytes) -> str:
    return data.decode("utf-8")


def _parses_python(data: bytes) -> bool:
    ast.parse(data)
    return True


def _parses_json(data: bytes) -> bool:
    json.loads(data)
    return True


def _parses_toml(data: bytes) -> bool:
    tomllib.loads(_text(data))
    return True


def _parses_yaml(data: bytes) -> bool:
    return yaml.safe_load(data) is not None


def _parses_xml(data: bytes) -> bool:
    ET.fromstring(data)  # noqa: S314 - files of installed packages, parsed to label them
    return True


def _parses_csv(data: bytes) -> bool:
    rows = list(csv.reader(io.StringIO(_text(data))))
    return len(rows) >= 2 and len({len(r) for r in rows if r}) == 1


def _is_text(data: bytes) -> bool:
    _text(data)
    return True


def _gunzips(data: bytes) -> bool:
    return bool(gzip.decompress(data) is not None)


def _bunzips(data: bytes) -> bool:
    return bool(bz2.decompress(data) is not None)


def _unzips(data: bytes) -> bool:
    return zipfile.ZipFile(io.BytesIO(data)).testzip() is None


def _any(data: bytes) -> bool:
    return True


# Name (lower case) -> label, then extension -> (label, the check a file must pass).
BY_NAME = {
    "metadata": "python-package-metadata",
    "record": "python-package-metadata",
    "wheel": "python-package-metadata",
    "installer": "python-package-metadata",
    "entry_points.txt": "python-package-metadata",
    "top_level.txt": "python-package-metadata",
    "py.typed": "python-typed-marker",
    "pyproject.toml": "pyproject",
    "package.json": "npm-package",
    "cmakelists.txt": "cmake",
    "makefile": "makefile",
}
BY_EXTENSION: dict[str, tuple[str, Callable[[bytes], bool]]] = {
    ".py": ("python", _parses_python),
    ".pyi": ("python-stub", _parses_python),
    ".h": ("c-header", _is_text),
    ".c": ("c", _is_text),
    ".pyx": ("cython", _is_text),
    ".pxd": ("cython", _is_text),
    ".f90": ("fortran", _is_text),
    ".f": ("fortran", _is_text),
    ".sql": ("sql", _is_text),
    ".json": ("json", _parses_json),
    ".csv": ("csv", _parses_csv),
    ".md": ("markdown", _is_text),
    ".rst": ("restructuredtext", _is_text),
    ".txt": ("plaintext", _is_text),
    ".yaml": ("yaml", _parses_yaml),
    ".yml": ("yaml", _parses_yaml),
    ".toml": ("toml", _parses_toml),
    ".ini": ("ini", _is_text),
    ".cfg": ("ini", _is_text),
    ".html": ("html", _is_text),
    ".css": ("css", _is_text),
    ".js": ("javascript", _is_text),
    ".xml": ("xml", _parses_xml),
    ".xsd": ("xml", _parses_xml),
    ".xslt": ("xml", _parses_xml),
    ".lua": ("lua", _is_text),
    ".mk": ("makefile", _is_text),
    ".png": ("png", _any),
    ".npy": ("numpy-array", _any),
    ".npz": ("zip", _unzips),
    ".gz": ("gzip", _gunzips),
    ".bz2": ("bzip2", _bunzips),
    ".so": ("elf", _any),
    ".pyc": ("python-bytecode", _any),
    ".exe": ("pe-executable", _any),
    ".a": ("ar", _any),
    ".whl": ("python-wheel", _unzips),
}


def _label(path: Path) -> tuple[str, Callable[[bytes], bool]] | None:
    name = path.name.lower()
    if name in BY_NAME:
        return BY_NAME[name], _any
    return BY_EXTENSION.get(path.suffix.lower())


def package_samples(root: Path, per_label: int, rng: random.Random) -> list[Sample]:
    found: dict[str, list[Path]] = collections.defaultdict(list)
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and (labelled := _label(path)) is not None:
            found[labelled[0]].append(path)
    samples = []
    for label, paths in sorted(found.items()):
        rng.shuffle(paths)
        kept = 0
        for path in paths:
            if kept == per_label:
                break
            data = path.read_bytes()
            if not data:
                continue
            labelled = _label(path)
            try:
                ok = labelled is not None and labelled[1](data)
            except (ValueError, SyntaxError, OSError, EOFError, zipfile.BadZipFile,
                    ET.ParseError, yaml.YAMLError, tomllib.TOMLDecodeError):  # fmt: skip
                ok = False
            if ok:
                samples.append(Sample(path.name, data[: PREFIX_BYTES * 2], label, "package"))
                kept += 1
    return samples


# -- generated files -----------------------------------------------------------------------


def _zip(members: dict[str, bytes], first: tuple[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        if first is not None:  # ODF and EPUB: an uncompressed "mimetype" member first
            archive.writestr(zipfile.ZipInfo(first[0]), first[1], zipfile.ZIP_STORED)
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _pdf(text: str) -> bytes:
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer << /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _gif(width: int) -> bytes:
    return (
        b"GIF89a"
        + struct.pack("<HH", width, 1)
        + b"\x00\x00\x00"
        + b"\x2c"
        + bytes(9)
        + b"\x02\x02\x44\x01\x00\x3b"
    )


def _bmp(width: int) -> bytes:
    row = (width * 3 + 3) & ~3
    pixels = bytes(row)
    header = struct.pack("<IiiHHIIiiII", 40, width, 1, 1, 24, 0, len(pixels), 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + 40 + len(pixels), 0, 0, 54) + header + pixels


def _wav(frames: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(bytes(frames * 2))
    return buffer.getvalue()


def _sqlite(rows: int) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "db.sqlite"
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, str(i)) for i in range(rows)])
        conn.commit()
        conn.close()
        return path.read_bytes()


def _tar(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name in names:
            data = f"member {name}\n".encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _email(subject: str) -> bytes:
    message = email.message.EmailMessage()
    message["From"] = "ann@example.org"
    message["To"] = "bob@example.org"
    message["Subject"] = subject
    message["Date"] = "Tue, 01 Dec 2026 08:00:00 +0000"
    message.set_content(f"About {subject}.\n")
    return b"Received: from mx.example.org by mail.example.org\n" + message.as_bytes()


def generated_samples() -> Iterator[Sample]:
    def made(filename: str, content: bytes, label: str) -> Sample:
        return Sample(filename, content, label, "generated")

    for i in range(4):
        word = {"word/document.xml": b"<w:document/>", "word/styles.xml": b"<w:styles/>"}
        yield made(f"report{i}.docx", _zip({"[Content_Types].xml": b"<Types/>", **word}), "docx")
        sheet = {"xl/workbook.xml": b"<workbook/>", "xl/worksheets/sheet1.xml": b"<sheet/>"}
        yield made(f"data{i}.xlsx", _zip({"[Content_Types].xml": b"<Types/>", **sheet}), "xlsx")
        slides = {"ppt/presentation.xml": b"<p/>", "ppt/slides/slide1.xml": b"<s/>"}
        yield made(f"deck{i}.pptx", _zip({"[Content_Types].xml": b"<Types/>", **slides}), "pptx")
        odf = ("mimetype", b"application/vnd.oasis.opendocument.text")
        yield made(f"letter{i}.odt", _zip({"content.xml": b"<office/>"}, odf), "odt")
        epub = ("mimetype", b"application/epub+zip")
        yield made(f"book{i}.epub", _zip({"META-INF/container.xml": b"<c/>"}, epub), "epub")
        yield made(f"lib{i}.jar", _zip({"META-INF/MANIFEST.MF": b"Manifest-Version: 1.0\n"}), "jar")
        yield made(f"files{i}.zip", _zip({f"notes{i}.txt": b"hello\n" * (i + 1)}), "zip")
        yield made(f"paper{i}.pdf", _pdf(f"Page of paper {i}"), "pdf")
        yield made(f"bundle{i}.tar", _tar([f"a{i}.txt", "b.txt"]), "tar")
        yield made(f"log{i}.xz", lzma.compress(b"line\n" * (i + 10)), "xz")
        yield made(f"tone{i}.wav", _wav(100 * (i + 1)), "wav")
        yield made(f"store{i}.sqlite", _sqlite(10 * (i + 1)), "sqlite")
        yield made(f"icon{i}.gif", _gif(i + 1), "gif")
        yield made(f"pixel{i}.bmp", _bmp(i + 1), "bmp")
        ihdr = struct.pack(">IIBBBBB", i + 1, 1, 8, 2, 0, 0, 0)
        png = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IEND", b"")
        yield made(f"dot{i}.png", png, "png")
        jfif = (
            b"\xff\xd8\xff\xe0"
            + struct.pack(">H", 16)
            + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
        )
        yield made(f"photo{i}.jpg", jfif + b"\xff\xd9", "jpeg")
        yield made(f"mail{i}.eml", _email(f"release {i}"), "email")
        yield made(
            f"cal{i}.ics",
            b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\n"
            + f"SUMMARY:Sync {i}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n".encode(),
            "ical",
        )
        yield made(f"deploy{i}.sh", f"#!/bin/bash\nset -e\necho deploy {i}\n".encode(), "shell")
        yield made(
            f"Dockerfile.{['dev', 'prod', 'ci', 'test'][i]}",
            b"FROM python:3.11\nRUN pip install x\n",
            "dockerfile",
        )
        yield made(
            ".env" if i == 0 else f".env.stage{i}", f"TOKEN=abc{i}\nDEBUG=0\n".encode(), "dotenv"
        )
        yield made(
            f"page{i}.svg",
            b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>',
            "svg",
        )
        rows = "\n".join(f"{n}\t{n * i}\tname{n}" for n in range(5))
        yield made(f"table{i}.tsv", f"id\tvalue\tname\n{rows}\n".encode(), "tsv")
        lines = "\n".join(json.dumps({"id": n, "i": i}) for n in range(4))
        yield made(f"events{i}.jsonl", (lines + "\n").encode(), "json-lines")
        yield made(
            f"main{i}.go", f"package main\n\nfunc main() {{ println({i}) }}\n".encode(), "go"
        )
        yield made(f"lib{i}.rs", f"pub fn f() -> i32 {{ {i} }}\n".encode(), "rust")
        yield made(f"App{i}.java", f"class App{i} {{ }}\n".encode(), "java")
        yield made(f"index{i}.ts", f"export const x: number = {i};\n".encode(), "typescript")
        yield made(f"types{i}.d.ts", b"export declare const x: number;\n", "typescript-declaration")
        yield made(f"doc{i}.rtf", b"{\\rtf1\\ansi Hello}", "rtf")


# -- the runs ------------------------------------------------------------------------------


@dataclass
class Result:
    exact: int = 0
    kind: int = 0  # exact, or a kind of the label (setup.cfg for ini), or the label a kind of it
    methods: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    confusions: collections.Counter[tuple[str, str]] = dataclasses.field(
        default_factory=collections.Counter
    )


def run(samples: list[Sample], mode: str) -> Result:
    index = system_index()
    result = Result()
    for sample in samples:
        filename = None if mode == "content only" else sample.filename
        mime = mimetypes.guess_type(sample.filename)[0] if mode == "name + guessed MIME" else None
        found = detect(index, filename, mime, sample.content)
        result.methods[found.method.value] += 1
        label = index.by_name[sample.label]
        if found.type.name == sample.label:
            result.exact += 1
        else:
            result.confusions[(sample.label, found.type.name)] += 1
        if index.kind_of(found.type, label) or index.kind_of(label, found.type):
            result.kind += 1
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--per-label", type=int, default=12, help="package files per label")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--part", choices=["detection", "extraction", "all"], default="all")
    parser.add_argument("--data", help="folder of the extraction files (generated if absent)")
    parser.add_argument("--pages", type=int, default=200, help="pages of the generated PDF")
    parser.add_argument("--repeat", type=int, default=3, help="extraction runs; the best counts")
    args = parser.parse_args()
    if args.part in ("detection", "all"):
        detection_accuracy(args)
    if args.part in ("extraction", "all"):
        with tempfile.TemporaryDirectory(prefix="fortemi-docs-") as scratch:
            folder = Path(args.data) if args.data else Path(scratch)
            extraction_throughput(folder, args.pages, args.repeat)


def detection_accuracy(args: argparse.Namespace) -> None:
    root = Path(sysconfig.get_paths()["purelib"])
    samples = package_samples(root, args.per_label, random.Random(args.seed))
    samples.extend(generated_samples())
    labels = collections.Counter(s.label for s in samples)
    origins = collections.Counter(s.origin for s in samples)
    print_setup(
        "documents: detection accuracy",
        [
            ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
            ("commit", _git_commit()),
            ("python", f"{platform.python_implementation()} {platform.python_version()}"),
            ("registry", f"{len(system_types())} system types"),
            (
                "set",
                f"{len(samples)} files of {len(labels)} types ({origins['package']} from "
                f"packages under {root}, {origins['generated']} generated), seed {args.seed}",
            ),
        ],
    )
    print(table(["label", "files"], [(k, str(v)) for k, v in sorted(labels.items())], "lr"))
    for mode in ("name", "name + guessed MIME", "content only"):
        result = run(samples, mode)
        total = len(samples)
        print(
            f"\n## {mode}: accuracy {result.exact / total:.1%} ({result.exact}/{total}); "
            f"the label or a kind of it {result.kind / total:.1%} ({result.kind}/{total})"
        )
        print("methods: " + ", ".join(f"{m} {n}" for m, n in result.methods.most_common()))
        if result.confusions:
            rows = [(f"{a} -> {b}", str(n)) for (a, b), n in result.confusions.most_common()]
            print(table(["confusion (label -> detected)", "files"], rows, "lr"))


if __name__ == "__main__":
    main()
