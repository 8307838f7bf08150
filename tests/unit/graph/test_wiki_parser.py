"""The wiki-link reader: Obsidian's syntax, nothing read from code or front matter."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fortemi.graph.links.wiki import (
    MAX_REFERENCES,
    WikiRef,
    front_matter,
    references,
    render,
    split_front_matter,
)


def test_every_form_of_the_syntax_is_read_with_its_parts() -> None:
    text = (
        "See [[Plain]], [[Target|the label]], [[Target#Some heading]] and "
        "[[Target#Heading|label]]; a path [[folder/note.md]] and [[folder/note]]; "
        "an embed ![[Diagram]] and ![[Doc#Part|shown]]."
    )
    assert references(text) == [
        WikiRef("Plain"),
        WikiRef("Target", label="the label"),
        WikiRef("Target", heading="Some heading"),
        WikiRef("Target", heading="Heading", label="label"),
        WikiRef("folder/note.md"),
        WikiRef("folder/note"),
        WikiRef("Diagram", embed=True),
        WikiRef("Doc", heading="Part", label="shown", embed=True),
    ]


def test_links_inside_fenced_indented_and_inline_code_are_ignored() -> None:
    text = "\n".join(
        [
            "Before [[Kept one]].",
            "",
            "```python",
            "x = [[Fenced]]",
            "```",
            "",
            "~~~",
            "[[Tilde fenced]]",
            "~~~",
            "",
            "    [[Indented code]]",
            "",
            "Inline `[[Code span]]` and ``[[Double `ticks`]]`` but [[Kept two]].",
            "",
            "- a list item with [[Kept three]]",
            "",
            "      [[Indented inside nothing: code again]]",
        ]
    )
    assert [ref.target for ref in references(text)] == ["Kept one", "Kept two", "Kept three"]


def test_an_unclosed_fence_hides_everything_after_it() -> None:
    # CommonMark: a fence that is never closed runs to the end of the document.
    assert references("[[Before]]\n```\n[[Inside]]\n") == [WikiRef("Before")]


def test_links_in_headings_tables_emphasis_and_image_text_are_read() -> None:
    text = (
        "# Heading with [[In heading]]\n\n"
        "| col | col |\n|---|---|\n| [[In cell\\|aliased]] | [[Other cell#h]] |\n\n"
        "*emphasis [[In emphasis]]* and ![alt [[In alt]]](img.png)\n"
    )
    assert references(text) == [
        WikiRef("In heading"),
        WikiRef("In cell", label="aliased"),
        WikiRef("Other cell", heading="h"),
        WikiRef("In emphasis"),
        WikiRef("In alt"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "[[#Heading only]]",  # into the note itself
        "[[ ]]",
        "[[]]",
        "\\[[Escaped]]",
        "[[Across\nlines]]",
        "[[Un]closed]]",
        "[[No end",
        "`[[unterminated code span` and then [[",
    ],
)
def test_what_is_not_a_reference_to_another_note(text: str) -> None:
    assert references(text) == []


def test_front_matter_is_not_read_for_links_and_gives_the_aliases() -> None:
    text = "---\naliases: [Alpha, Beta]\nrelated: '[[In front matter]]'\n---\nBody [[Body link]]\n"
    assert references(text) == [WikiRef("Body link")]
    assert front_matter(text)["aliases"] == ["Alpha", "Beta"]


def test_a_rule_is_not_front_matter_and_invalid_yaml_gives_none() -> None:
    assert split_front_matter("---\nno closing line [[x]]\n") == (
        None,
        "---\nno closing line [[x]]\n",
    )
    assert front_matter("---\n: : [unbalanced\n---\n") == {}
    assert front_matter("---\n- a list\n---\n") == {}


def test_only_markdown_and_plain_text_are_read() -> None:
    assert references("[[1, 2]]", "json") == []
    assert references("[[Note]]", "python") == []
    assert references("[[Note]]", "text") == [WikiRef("Note")]
    assert references("[[Note]]", "Markdown") == [WikiRef("Note")]


def test_a_note_keeps_at_most_the_reference_limit() -> None:
    text = " ".join(f"[[n{i}]]" for i in range(MAX_REFERENCES + 5))
    found = references(text)
    assert len(found) == MAX_REFERENCES
    assert found[-1] == WikiRef(f"n{MAX_REFERENCES - 1}")


# -- properties ------------------------------------------------------------------------

# What a title, heading or label may hold in wiki syntax: no brackets, no pipe, no line
# break, no "#" in a target or heading; not blank; no surrounding spaces (they are trimmed).
_FORBIDDEN = "[]|#\n\r\\`"
_part = (
    st.text(
        alphabet=st.characters(
            blacklist_characters=_FORBIDDEN, blacklist_categories=("Cs", "Cc", "Zl", "Zp")
        ),
        min_size=1,
        max_size=30,
    )
    .map(str.strip)
    .filter(bool)
)
_label = (
    st.text(
        alphabet=st.characters(
            blacklist_characters="[]|\n\r\\`", blacklist_categories=("Cs", "Cc", "Zl", "Zp")
        ),
        min_size=1,
        max_size=30,
    )
    .map(str.strip)
    .filter(bool)
)
# A heading starting with "^" is a block id ([[note#^id]], also [[note#heading#^id]]).
_heading = _part.filter(lambda text: not text.startswith("^"))
_block = _part.filter(lambda text: "^" not in text)
_refs = st.builds(
    WikiRef,
    target=_part,
    heading=st.none() | _heading,
    label=st.none() | _label,
    embed=st.booleans(),
    block=st.none() | _block,
)


# Arbitrary text, biased towards what the reader reacts to.
_SYNTAX = ["[[", "]]", "![[", "|", "\\|", "#", "`", "```", "~~~", "\n", "    ", "---\n", "\\"]
_SYNTAX += ["*", "_", "<div>", "</div>", "- ", "> ", "| a |", "|---|", "![x](", ")", " "]
_noisy = st.lists(st.sampled_from(_SYNTAX) | st.text(max_size=6), max_size=80).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=400) | _noisy)
def test_arbitrary_text_never_crashes_the_reader(text: str) -> None:
    for ref in references(text):
        assert ref.target == ref.target.strip()
        assert ref.target


@settings(max_examples=200, deadline=None)
@given(st.lists(_refs, min_size=1, max_size=8))
def test_written_references_are_read_back_in_order(refs: list[WikiRef]) -> None:
    # Each reference in its own paragraph: what surrounds a link in running text can
    # legitimately change its meaning (a preceding backtick opens a code span).
    text = "\n\n".join(f"Text before {render(ref)} and after." for ref in refs)
    assert references(text) == refs


@settings(max_examples=100, deadline=None)
@given(st.lists(_refs, min_size=1, max_size=5), st.sampled_from(["```", "~~~~"]))
def test_references_inside_a_fence_are_never_read(refs: list[WikiRef], fence: str) -> None:
    body = "\n".join(render(ref) for ref in refs)
    assert references(f"Intro\n\n{fence}\n{body}\n{fence}\n") == []
