"""Chunking notes for embedding: exact slices, bounded size, structure respected."""

from __future__ import annotations

import unicodedata
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fortemi.retrieval.chunking import Chunk, chunk_text


def _assert_well_formed(text: str, chunks: list[Chunk], size: int) -> None:
    """Offsets exact, stripped, bounded, ordered; every non-space character covered."""
    covered = [False] * len(text)
    for ordinal, chunk in enumerate(chunks):
        assert chunk.ordinal == ordinal
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text
        assert chunk.text == chunk.text.strip()
        assert len(chunk.text) <= size
        covered[chunk.start : chunk.end] = [True] * (chunk.end - chunk.start)
    for before, after in pairwise(chunks):
        assert before.start < after.start
        assert before.end < after.end
    missed = [i for i, char in enumerate(text) if not char.isspace() and not covered[i]]
    assert missed == []


def _word_around(text: str, index: int) -> str:
    """The run of non-space characters containing ``text[index]``."""
    start = end = index
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end]


def _assert_words_whole_unless_longer_than(text: str, chunks: list[Chunk], size: int) -> None:
    for chunk in chunks:
        for cut in (chunk.start, chunk.end):
            if 0 < cut < len(text) and not text[cut - 1].isspace() and not text[cut].isspace():
                assert len(_word_around(text, cut)) > size, (cut, chunk)


def _words(count: int, seed: int = 0) -> str:
    vocabulary = ["memory", "note", "vector", "search", "token", "graph", "index", "chunk"]
    return " ".join(vocabulary[(seed + i * 3) % len(vocabulary)] for i in range(count))


def _sentences(count: int) -> str:
    return " ".join(f"Sentence {i} talks about {_words(5, i)}." for i in range(count))


# --- arguments and trivial input -------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "\n\n\t  \r\n", "\u3000\u2028"])
@pytest.mark.parametrize("format", ["markdown", "text", "python"])
def test_blank_text_has_no_chunks(text: str, format: str) -> None:
    assert chunk_text(text, format=format) == []


@pytest.mark.parametrize(
    ("size", "overlap", "message"),
    [
        (99, 0, "size must be at least 100"),
        (0, 0, "size must be at least 100"),
        (1000, -1, "overlap must be at least 0"),
        (1000, 500, "less than half the size"),
        (101, 51, "less than half the size"),
    ],
)
def test_invalid_size_or_overlap_is_rejected_with_a_clear_message(
    size: int, overlap: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        chunk_text("some text", size=size, overlap=overlap)


def test_smallest_valid_arguments_are_accepted() -> None:
    text = _sentences(20)
    chunks = chunk_text(text, size=100, overlap=49)
    _assert_well_formed(text, chunks, 100)


def test_short_note_is_one_chunk_stripped_by_offsets() -> None:
    text = "\n\n   Hello, world.  \n\t"
    assert chunk_text(text) == [Chunk(0, "Hello, world.", 5, 18, None)]


# --- markdown structure ----------------------------------------------------------------


def test_headings_start_chunks_and_carry_their_heading_path() -> None:
    text = (
        "Intro before any heading.\n\n"
        "# Setup\nSetup text.\n\n"
        "## Install\nInstall text.\n\n"
        "### Linux\nLinux text.\n\n"
        "## Configure ##\nConfigure text.\n\n"
        "# Usage\nUsage text.\n"
    )
    chunks = chunk_text(text, size=1000)
    _assert_well_formed(text, chunks, 1000)
    assert [(c.heading, c.text.splitlines()[0]) for c in chunks] == [
        (None, "Intro before any heading."),
        ("Setup", "# Setup"),
        ("Setup > Install", "## Install"),
        ("Setup > Install > Linux", "### Linux"),
        ("Setup > Configure", "## Configure ##"),
        ("Usage", "# Usage"),
    ]
    assert all(len(c.text.splitlines()) == 2 for c in chunks[1:])


def test_heading_with_no_text_of_its_own_travels_with_the_next_heading() -> None:
    text = "# Guide\n\n## Install\n\nRun the installer."
    assert chunk_text(text) == [Chunk(0, text, 0, len(text), "Guide > Install")]


def test_heading_stays_with_the_first_piece_of_an_oversized_section() -> None:
    text = "## Background\n" + _sentences(60)
    chunks = chunk_text(text, size=300, overlap=50)
    _assert_well_formed(text, chunks, 300)
    assert chunks[0].text.startswith("## Background\nSentence 0 talks")
    assert len(chunks[0].text) > 150
    assert {c.heading for c in chunks} == {"Background"}


def test_oversized_list_is_opened_into_whole_items_and_keeps_its_heading() -> None:
    items = [
        f"- Item {i}. {_words(3 + i % 7, i)}.\n"  # items of varied length, so that sentence
        f"  More about item {i}. {_words(2 + i % 4, i)}.\n"  # ends fall inside them
        f"  - Nested point {i}."
        for i in range(20)
    ]
    text = "# Shopping\n" + "\n".join(items)
    chunks = chunk_text(text, size=400, overlap=0)
    _assert_well_formed(text, chunks, 400)
    assert chunks[0].text.startswith("# Shopping\n- Item 0.")
    assert all(c.text.startswith("- Item") for c in chunks[1:])
    for item in items:
        assert sum(item in c.text for c in chunks) == 1


def test_heading_is_not_left_alone_before_a_token_longer_than_size() -> None:
    text = "# Attachment\n" + "QUJD" * 150
    chunks = chunk_text(text, size=200, overlap=20)
    _assert_well_formed(text, chunks, 200)
    assert chunks[0].text.startswith("# Attachment\nQUJD")
    assert len(chunks[0].text) == 200


def test_heading_goes_alone_when_the_first_word_fits_only_without_it() -> None:
    word = "W" * 195
    text = f"# Heading\n{word} and more"
    chunks = chunk_text(text, size=200, overlap=20)
    _assert_well_formed(text, chunks, 200)
    _assert_words_whole_unless_longer_than(text, chunks, 200)
    assert chunks[0].text == "# Heading"
    assert chunks[1].text.startswith(word)


def test_hash_lines_inside_a_fence_are_code_not_headings() -> None:
    text = "# Real\n\n```bash\n# install it\napt install fortemi\n```\n\nAfter."
    chunks = chunk_text(text)
    assert [(c.heading, c.text) for c in chunks] == [("Real", text)]


def test_hash_without_a_space_or_seven_hashes_is_not_a_heading() -> None:
    text = "#hashtag at the start\n\n####### seven hashes"
    assert [c.heading for c in chunk_text(text)] == [None]


def test_small_paragraphs_are_packed_together_without_overlap() -> None:
    paragraphs = [f"Paragraph {i}. {_words(12, i)}." for i in range(20)]
    text = "\n\n".join(paragraphs)
    chunks = chunk_text(text, size=400, overlap=100)
    _assert_well_formed(text, chunks, 400)
    assert len(chunks) < len(paragraphs) / 2
    for before, after in pairwise(chunks):
        assert before.end < after.start
    for chunk in chunks:  # whole paragraphs only
        assert all(p in paragraphs for p in chunk.text.split("\n\n"))


def test_fenced_code_block_that_fits_is_kept_whole() -> None:
    fence = "```python\n" + "\n".join(f"value_{i} = {i} * 2" for i in range(30)) + "\n```"
    assert 400 < len(fence) < 600
    text = f"{_sentences(12)}\n\n{fence}\n\n{_sentences(3)}"
    chunks = chunk_text(text, size=800, overlap=100)
    _assert_well_formed(text, chunks, 800)
    fence_start = text.index(fence)
    holding = [c for c in chunks if c.start < fence_start + len(fence) and c.end > fence_start]
    assert len(holding) == 1
    assert fence in holding[0].text


def test_oversized_fence_is_split_at_definitions_keeping_its_fence_lines() -> None:
    functions = [
        f"def function_{i}(argument):\n"
        + "\n".join(f"    step_{j} = argument + {j}" for j in range(8))
        + "\n    return step_7"
        for i in range(6)
    ]
    fence = "```python\n" + "\n".join(functions) + "\n```"
    text = f"Some code:\n\n{fence}\n"
    chunks = chunk_text(text, size=700, overlap=100)
    _assert_well_formed(text, chunks, 700)
    for function in functions:
        assert sum(function in c.text for c in chunks) == 1
    fenced = [c for c in chunks if c.end > text.index("```")]
    assert fenced[0].text.startswith(("Some code:", "```python\ndef function_0"))
    assert all(c.text.startswith("def function_") for c in fenced[1:])
    assert fenced[-1].text.endswith("return step_7\n```")


def test_loose_list_that_fits_is_kept_in_one_chunk() -> None:
    items = [f"- item {i}: {_words(10, i)}" for i in range(5)]
    listing = (
        "\n\n".join(items[:2]) + "\n\n  continued paragraph of item 1\n\n" + "\n\n".join(items[2:])
    )
    text = f"{_sentences(12)}\n\n{listing}\n\n{_sentences(2)}"
    chunks = chunk_text(text, size=1000, overlap=0)
    _assert_well_formed(text, chunks, 1000)
    assert sum(listing in c.text for c in chunks) == 1
    assert not any(items[0] in c.text and listing not in c.text for c in chunks)


def test_long_paragraph_is_split_at_sentence_ends_with_overlap() -> None:
    text = _sentences(40)
    size, overlap = 300, 80
    chunks = chunk_text(text, size=size, overlap=overlap)
    _assert_well_formed(text, chunks, size)
    assert len(chunks) > 5
    assert all(c.text.endswith(".") for c in chunks)
    for before, after in pairwise(chunks):
        assert 0 < before.end - after.start <= overlap
        assert after.text.startswith("Sentence ")


def test_paragraph_without_sentence_ends_is_split_between_words() -> None:
    text = _words(400)
    size, overlap = 200, 40
    chunks = chunk_text(text, format="text", size=size, overlap=overlap)
    _assert_well_formed(text, chunks, size)
    _assert_words_whole_unless_longer_than(text, chunks, size)
    for before, after in pairwise(chunks):
        assert 0 < before.end - after.start <= overlap


def test_zero_overlap_makes_pieces_of_a_split_paragraph_abut() -> None:
    text = _sentences(40)
    chunks = chunk_text(text, size=300, overlap=0)
    _assert_well_formed(text, chunks, 300)
    assert all(b.end < a.start for b, a in pairwise(chunks))


def test_token_longer_than_size_is_hard_cut_with_exact_overlap() -> None:
    token = "QUJDRA==" * 600  # 4,800 characters of base64, no spaces
    text = f"Attachment:\n\n{token}\n\nEnd."
    chunks = chunk_text(text, size=1000, overlap=100)
    _assert_well_formed(text, chunks, 1000)
    pieces = [c for c in chunks if text.index(token) <= c.start < text.index(token) + len(token)]
    assert [len(c.text) for c in pieces[:-1]] == [1000] * (len(pieces) - 1)
    for before, after in pairwise(pieces):
        assert after.start == before.end - 100
    assert chunks[0].text == "Attachment:"
    assert chunks[-1].text == "End."


def test_word_that_fits_alone_is_not_cut_to_make_room_for_overlap() -> None:
    long_word = "x" * 180
    text = f"{_words(30)} {long_word} {_words(30)}"
    chunks = chunk_text(text, format="text", size=200, overlap=90)
    _assert_well_formed(text, chunks, 200)
    assert sum(long_word in c.text for c in chunks) >= 1
    _assert_words_whole_unless_longer_than(text, chunks, 200)


def test_word_as_long_as_size_is_not_cut_to_keep_an_overlap() -> None:
    word = "Q" * 200
    text = f"a bb {word}"
    chunks = chunk_text(text, format="text", size=200, overlap=50)
    _assert_well_formed(text, chunks, 200)
    assert [c.text for c in chunks] == ["a bb", word]


# --- code --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("format", "keyword", "body"),
    [
        ("python", "def", "def {name}(value):\n    total = value + 1\n    return total * 2\n"),
        ("Python", "class", "class {name}:\n    size = 1\n    limit = 2\n    name = 'x'\n"),
        ("js", "function", "function {name}(value) {{\n  const total = value + 1;\n}}\n"),
        ("go", "func", "func {name}(value int) int {{\n\ttotal := value + 1\n\treturn total\n}}\n"),
        ("rust", "pub fn", "pub fn {name}(value: u32) -> u32 {{\n    value + 1\n}}\n"),
        ("code", "async def", "async def {name}(value):\n    await value\n    return 3\n"),
    ],
)
def test_code_is_split_at_top_level_definitions(format: str, keyword: str, body: str) -> None:
    definitions = [body.format(name=f"handler_number_{i}") for i in range(12)]
    text = "".join(definitions)  # no blank lines: only definition starts separate them
    chunks = chunk_text(text, format=format, size=300, overlap=50)
    _assert_well_formed(text, chunks, 300)
    assert len(chunks) > 1
    assert all(c.text.startswith(keyword + " ") for c in chunks)
    for definition in definitions:
        assert sum(definition.strip() in c.text for c in chunks) == 1


def test_decorators_and_comments_stay_with_their_definition() -> None:
    text = (
        "import os\n"
        + "CONSTANT = 1\n" * 20
        + "# Explains the function.\n@cache\n@other(arg=1)\ndef decorated():\n    return os.sep\n"
    )
    chunks = chunk_text(text, format="python", size=300, overlap=50)
    _assert_well_formed(text, chunks, 300)
    assert chunks[-1].text.startswith("# Explains the function.\n@cache\n@other(arg=1)\ndef")


def test_function_body_with_blank_lines_stays_with_its_definition() -> None:
    function = "def spaced():\n    first = 1\n\n    second = 2\n\n    return first + second"
    text = "\n".join(f"value_{i} = {i}" for i in range(20)) + "\n\n" + function + "\n"
    chunks = chunk_text(text, format="python", size=300, overlap=0)
    _assert_well_formed(text, chunks, 300)
    assert sum(function in c.text for c in chunks) == 1


def test_oversized_function_is_split_at_line_ends_with_line_aligned_overlap() -> None:
    lines = [f"    result_{i} = compute({i}, factor=3)" for i in range(80)]
    text = "def huge():\n" + "\n".join(lines) + "\n    return result_79\n"
    chunks = chunk_text(text, format="python", size=400, overlap=100)
    _assert_well_formed(text, chunks, 400)
    for chunk in chunks:
        assert chunk.end == len(text.rstrip()) or text[chunk.end] == "\n"
        assert text[chunk.start - 1 : chunk.start] in ("", " ")
        assert chunk.text.startswith(("def huge", "result_"))
    for before, after in pairwise(chunks):
        assert 0 < before.end - after.start <= 100


def test_markdown_syntax_in_code_formats_is_not_structure() -> None:
    text = "# comment, not a heading\nx = 1\n```\ny = 2\n"
    assert chunk_text(text, format="python") == [Chunk(0, text.strip(), 0, len(text) - 1, None)]


# --- plain text --------------------------------------------------------------------------


@pytest.mark.parametrize("format", ["text", "plain", "org", "unknown-format"])
def test_plain_and_unknown_formats_have_no_headings(format: str) -> None:
    text = "# Not a heading\nbody\n\n## Nor this\nmore body"
    chunks = chunk_text(text, format=format, size=100, overlap=10)
    assert [(c.heading, c.text) for c in chunks] == [(None, text)]


def test_plain_text_paragraphs_are_packed_and_split_like_markdown() -> None:
    text = "\n\n".join([_sentences(2), _sentences(30), _sentences(2)])
    chunks = chunk_text(text, format="text", size=400, overlap=60)
    _assert_well_formed(text, chunks, 400)
    assert chunks[0].text == _sentences(2)
    assert chunks[-1].text == _sentences(2)


# --- unicode -----------------------------------------------------------------------------


def test_offsets_are_exact_over_cjk_emoji_and_combining_marks() -> None:
    text = (
        "# 日本語の見出し\n\n"
        + "これは文です。" * 40
        + "\n\n"
        + "Cafe\u0301 na\u0131\u0308ve \U0001f469\u200d\U0001f4bb \U0001f44d\U0001f3fd. " * 30
        + "\n\n## \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac\n\n\u039a\u03b5\u03af\u03bc\u03b5\u03bd\u03bf."
    )
    chunks = chunk_text(text, size=150, overlap=30)
    _assert_well_formed(text, chunks, 150)
    assert chunks[0].heading == "日本語の見出し"
    assert chunks[-1].heading == "日本語の見出し > \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac"


def test_cjk_paragraph_is_split_at_full_stops() -> None:
    text = "这是一个关于记忆的句子。" * 40
    chunks = chunk_text(text, format="text", size=100, overlap=0)
    _assert_well_formed(text, chunks, 100)
    assert all(c.text.endswith("。") for c in chunks)


@pytest.mark.parametrize(
    "cluster",
    [
        "e\u0301",
        "a\u0308\u0323",
        "\U0001f469\u200d\U0001f4bb",
        "\U0001f44d\U0001f3fd",
        "\u2764\ufe0f",
    ],
)
def test_hard_cut_does_not_split_a_combining_or_emoji_sequence(cluster: str) -> None:
    text = cluster * 300
    chunks = chunk_text(text, size=100, overlap=20)
    _assert_well_formed(text, chunks, 100)
    for chunk in chunks:
        assert chunk.text.startswith(cluster)
        assert chunk.text.endswith(cluster)
        assert unicodedata.category(chunk.text[0]) not in ("Mn", "Mc", "Me")


# --- properties --------------------------------------------------------------------------

_WORD_FRAGMENTS = [
    "alpha", "Beta", "x", "note", "3.14", "naïve", "e\u0301te\u0301", "日本語", "\u03a9\u03bc\u03ad\u03b3\u03b1",
    "\U0001f469\u200d\U0001f4bb", "https://example.com/a?b=c&d=e", "Q" * 150, "Z" * 420,
]  # fmt: skip
_SEPARATOR_FRAGMENTS = [
    " ", " ", " ", ". ", "! ", "? ", ".\n", "\n", "\n\n", "\n\n\n", "\r\n", "\t",
    "\n# ", "\n## ", "\n### ", "\n```\n", "\n```py\n", "\n~~~~\n", "\n- ", "\n  - ",
    "\n1. ", "\n    ", "\n| a | b |\n", "\ndef f():\n", "\n@decorator\n", "\nclass C:\n",
    "\n    return 1\n", "}\n", "\n> ", "\u2028", "\u3000",
]  # fmt: skip
_FRAGMENTS = st.one_of(
    st.sampled_from(_WORD_FRAGMENTS),
    st.sampled_from(_SEPARATOR_FRAGMENTS),
    # Anything else, except CJK full stops: they end sentences without a space, which the
    # word-boundary property below does not allow for.
    st.text(
        st.characters(codec="utf-8", exclude_characters="\u3002\uff01\uff1f"),
        max_size=4,
    ),
)
_TEXTS = st.lists(_FRAGMENTS, max_size=120).map("".join)


@st.composite
def _limits(draw: st.DrawFn) -> tuple[int, int]:
    size = draw(st.integers(min_value=100, max_value=600))
    return size, draw(st.integers(min_value=0, max_value=(size - 1) // 2))


@settings(max_examples=400, deadline=None, database=None)
@given(
    text=_TEXTS,
    limits=_limits(),
    format=st.sampled_from(["markdown", "text", "python", "js"]),
)
def test_chunks_are_exact_bounded_ordered_and_cover_all_text(
    text: str, limits: tuple[int, int], format: str
) -> None:
    size, overlap = limits
    chunks = chunk_text(text, format=format, size=size, overlap=overlap)
    _assert_well_formed(text, chunks, size)
    _assert_words_whole_unless_longer_than(text, chunks, size)
    assert chunks == chunk_text(text, format=format, size=size, overlap=overlap)
    if format != "markdown":
        assert all(c.heading is None for c in chunks)


@settings(max_examples=150, deadline=None, database=None)
@given(
    paragraphs=st.lists(
        st.lists(
            st.sampled_from(["Word", "word", "words.", "end!", "x" * 30]), min_size=1, max_size=120
        ).map(" ".join),
        min_size=1,
        max_size=8,
    ),
    limits=_limits(),
)
def test_only_pieces_of_a_split_paragraph_overlap(
    paragraphs: list[str], limits: tuple[int, int]
) -> None:
    size, overlap = limits
    text = "\n\n".join(paragraphs)
    chunks = chunk_text(text, size=size, overlap=overlap)
    _assert_well_formed(text, chunks, size)
    spans = []
    start = 0
    for paragraph in paragraphs:
        spans.append((start, start + len(paragraph)))
        start += len(paragraph) + 2
    for before, after in pairwise(chunks):
        if after.start < before.end:
            assert before.end - after.start <= overlap
            inside = [s for s in spans if s[0] <= after.start and before.end <= s[1]]
            assert inside
            assert inside[0][1] - inside[0][0] > size
