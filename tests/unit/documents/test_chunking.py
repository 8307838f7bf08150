"""Syntactic chunking: each language cut at its function and class boundaries, oversized
definitions opened into their members or split, and everything else left to the existing
chunker unchanged."""

from __future__ import annotations

import re

import pytest

from fortemi.documents.chunking import CodeChunker
from fortemi.retrieval.chunking import chunk_text

CHUNKER = CodeChunker(chunk_text)

# Each sample, and the first characters of each of its top-level units (definitions with
# the comments or attributes above them, imports, statements).
SAMPLES: dict[str, tuple[str, list[str]]] = {
    "python": (
        'import os\nimport sys\n\n\n# Adds one.\ndef alpha(x):\n    """One more than x."""\n    return x + 1\n\n\n'
        "@dataclass\nclass Beta:\n    name: str\n    size: int = 0\n\n    def grow(self): ...\n\n\n"
        "async def gamma(path):\n    return os.path.join(path, 'x')\n",
        ["import os", "import sys", "# Adds one.", "@dataclass", "async def gamma"],
    ),
    "javascript": (
        "import fs from 'fs';\n\n/** Reads it. */\nfunction read(path) {\n  return fs.readFileSync(path, 'utf8');\n}\n\n"
        "class Store {\n  constructor() { this.items = []; }\n  add(x) { this.items.push(x); }\n}\n\n"
        "export const twice = (n) => {\n  return n * 2 + 0 * n + 0;\n};\n",
        ["import fs", "/** Reads it. */", "class Store", "export const twice"],
    ),
    "typescript": (
        "export interface Shape {\n  area(): number;\n  name: string;\n  sides?: number;\n}\n\n"
        "export function total(shapes: Shape[]): number {\n  return shapes.length;\n}\n\n"
        "export class Square implements Shape {\n  name = 'sq';\n  area() { return 1; }\n}\n",
        ["export interface Shape", "export function total", "export class Square"],
    ),
    "go": (
        'package main\n\nimport "fmt"\n\n// Greet says hello to name.\nfunc Greet(name string) string {\n\treturn fmt.Sprint(name)\n}\n\n'
        "type Point struct {\n\tX int\n\tY int\n\tLabel string\n\tHidden bool\n}\n\n"
        "func (p Point) Sum() int {\n\treturn p.X + p.Y + len(p.Label)\n}\n",
        [
            "package main",
            'import "fmt"',
            "// Greet says hello",
            "type Point struct",
            "func (p Point) Sum",
        ],
    ),
    "rust": (
        "use std::fmt;\nuse std::io;\n\n#[derive(Debug, Clone)]\npub struct Point {\n    x: i32,\n    y: i32,\n}\n\n"
        "impl Point {\n    pub fn sum(&self) -> i32 {\n        self.x + self.y\n    }\n}\n\n"
        'fn main() {\n    println!("{:?}", Point { x: 1, y: 2 });\n}\n',
        ["use std::fmt;", "use std::io;", "#[derive(Debug, Clone)]", "impl Point", "fn main()"],
    ),
    "java": (
        'package demo;\n\nimport java.util.List;\n\n/** A greeter. */\npublic class Greeter {\n  String greet() { return "hi"; }\n}\n\n'
        "interface Named {\n  String name();\n  default String upper() { return name(); }\n}\n\n"
        "enum Colour {\n  RED, GREEN, BLUE;\n  int code() { return ordinal() + 1; }\n}\n",
        [
            "package demo;",
            "import java.util.List;",
            "/** A greeter. */",
            "interface Named",
            "enum Colour",
        ],
    ),
    "c": (
        "#include <stdio.h>\n#include <stdlib.h>\n\n/* Adds two ints. */\nint add(int a, int b) {\n  return a + b + 0 * a * b;\n}\n\n"
        "struct point {\n  int x;\n  int y;\n  const char *label;\n  int hidden;\n};\n\n"
        'int main(void) {\n  printf("%d\\n", add(1, 2));\n  return 0;\n}\n',
        [
            "#include <stdio.h>",
            "#include <stdlib.h>",
            "/* Adds two ints. */",
            "struct point",
            "int main(void)",
        ],
    ),
    "cpp": (
        "#include <vector>\n#include <string>\n\nnamespace geo {\nstruct P { int x; };\n}\n\n"
        "template <typename T>\nT twice(T value) {\n  return value + value + T{};\n}\n\n"
        "class Shape {\n public:\n  virtual ~Shape() = default;\n  virtual double area() const = 0;\n};\n",
        [
            "#include <vector>",
            "#include <string>",
            "namespace geo",
            "template <typename T>",
            "class Shape",
        ],
    ),
    "sql": (
        "CREATE TABLE users (\n  id integer PRIMARY KEY,\n  name text NOT NULL,\n  email text\n);\n\n"
        "-- Every active user.\nSELECT id, name FROM users WHERE email IS NOT NULL ORDER BY name;\n\n"
        "CREATE INDEX users_by_name ON users (name, email, id);\n",
        ["CREATE TABLE users", "-- Every active user.", "CREATE INDEX users_by_name"],
    ),
    "shell": (
        '#!/bin/sh\nset -eu\nexport LANG=C.UTF-8\n\n# Says hello.\ngreet() {\n  echo "hello $1, from $(hostname)"\n}\n\n'
        'cleanup() {\n  rm -rf "$TMPDIR/work" "$TMPDIR/cache"\n  echo done\n}\n\n'
        "greet world\n",
        ["#!/bin/sh\nset -eu", "export LANG", "# Says hello.", "cleanup()", "greet world"],
    ),
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_each_language_is_chunked_at_its_definition_boundaries(language: str) -> None:
    source, starts = SAMPLES[language]

    boundaries = [source.index(s) for s in starts]

    result = CHUNKER.chunk(source, format=language, size=100, overlap=20)

    assert result.strategy_used == f"syntactic:{language}"
    assert len(result.chunks) >= 2
    # Every chunk starts at a unit, and no unit is cut: each starts in exactly one chunk,
    # which runs at least to the next unit's start (or the end of the text).
    assert {c.start for c in result.chunks} <= set(boundaries)
    ends = [*boundaries[1:], len(source.rstrip())]
    for start, end in zip(boundaries, ends, strict=True):
        [holder] = [c for c in result.chunks if c.start <= start < c.end]
        assert holder.end >= len(source[:end].rstrip())
    for chunk in result.chunks:
        assert source[chunk.start : chunk.end] == chunk.text


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_every_non_space_character_is_in_a_chunk(language: str) -> None:
    source, _ = SAMPLES[language]

    chunks = CHUNKER.chunk(source, format=language, size=100, overlap=20).chunks

    covered: set[int] = set()
    for chunk in chunks:
        covered.update(range(chunk.start, chunk.end))
    assert {i for i, ch in enumerate(source) if not ch.isspace()} <= covered


def test_chunks_are_headed_by_the_definition_they_start_with() -> None:
    source, _ = SAMPLES["python"]

    chunks = CHUNKER.chunk(source, format="python", size=100, overlap=20).chunks

    assert [c.heading for c in chunks] == ["alpha", "Beta", "gamma"]
    assert chunks[0].text.startswith("import os")  # imports name no definition


def test_an_oversized_class_opens_into_its_methods_with_its_header_on_the_first() -> None:
    methods = "".join(
        f"    def method_{i}(self):\n        return {i} + {i} + {i} + {i} + {i}\n\n"
        for i in range(6)
    )
    source = f'class Big:\n    """Many methods."""\n\n{methods}'

    chunks = CHUNKER.chunk(source, format="py", size=120, overlap=20).chunks

    assert chunks[0].text.startswith('class Big:\n    """Many methods."""')
    assert all(re.match(r"(class Big:|def method_\d)", c.text) for c in chunks)
    assert {c.heading for c in chunks} <= {"Big", *(f"Big > method_{i}" for i in range(6))}
    assert len(chunks) > 1


def test_an_oversized_function_with_no_members_is_split_by_the_code_chunker() -> None:
    body = "".join(f"    total += {i} * {i} + {i}\n" for i in range(40))
    source = f"def long(total):\n{body}    return total\n"

    chunks = CHUNKER.chunk(source, format="python", size=200, overlap=40).chunks

    assert len(chunks) > 1
    assert all(len(c.text) <= 200 and c.heading == "long" for c in chunks)
    assert chunks[0].text.startswith("def long(total):")
    assert chunks[-1].text.endswith("return total")


def test_code_without_a_grammar_falls_back_to_the_code_chunker_and_says_so() -> None:
    source = 'fun main() {\n    println("hi")\n}\n\nfun other() = 1\n'

    result = CHUNKER.chunk(source, format="kotlin", size=100, overlap=10)

    assert result.strategy_used == "code_fallback:kotlin"
    assert [(c.start, c.end) for c in result.chunks] == [
        (c.start, c.end) for c in chunk_text(source, format="code", size=100, overlap=10)
    ]


@pytest.mark.parametrize("format", ["markdown", "text", "gfm", "unknown-format"])
def test_everything_but_code_is_chunked_exactly_as_before(format: str) -> None:
    text = "# Guide\n\n" + "Some prose sentence here. " * 60 + "\n\n## Next\n\n- a\n- b\n"

    ours = CHUNKER.chunk(text, format=format, size=300, overlap=50)

    before = chunk_text(text, format=format, size=300, overlap=50)
    assert ours.strategy_used == f"default:{format}"
    assert [(c.start, c.end, c.heading) for c in ours.chunks] == [
        (c.start, c.end, c.heading) for c in before
    ]


def test_offsets_are_characters_where_the_text_is_not_ascii() -> None:
    source = (
        'GREETING = "héllo wörld 👋🏽"\n\n\ndef grüß(name):\n    return f"{GREETING}, {name} ✓"\n\n\n'
        'def adiós():\n    return "¡adiós! — ça va, 你好"\n'
    )

    chunks = CHUNKER.chunk(source, format="python", size=100, overlap=10).chunks

    assert [c.text for c in chunks] == [source[c.start : c.end] for c in chunks]
    assert chunks[-1].text == 'def adiós():\n    return "¡adiós! — ça va, 你好"'
    assert chunks[-1].heading == "adiós"
