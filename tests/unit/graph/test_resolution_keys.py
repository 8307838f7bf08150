"""The keys of notes and references: what makes a reference name a note."""

from __future__ import annotations

from fortemi.graph.links.resolution import KeyRules, NoteKey, fold, path_key
from fortemi.graph.links.wiki import WikiRef

RULES = KeyRules()


def test_folding_ignores_case_spacing_normal_form_and_the_md_extension() -> None:
    assert fold("  Project   PLAN ") == fold("project plan") == fold("Project Plan.md")
    assert fold("Straße") == fold("STRASSE")  # case folding, not lower()
    assert fold("e\u0301t\u00e9") == fold("\u00e9t\u00e9")  # NFC: composed and decomposed


def test_paths_are_normalised_and_relative_ones_follow_the_source_folder() -> None:
    assert path_key("/a/./b//c.md") == "a/b/c"
    assert path_key("a\\b.md") == "a/b"
    assert path_key("../shared/x.md", relative_to="projects/alpha/plan.md") == "projects/shared/x"
    assert path_key("./y", relative_to="projects/alpha/plan.md") == "projects/alpha/y"
    # Without a folder to start from, a relative path stays as written (it dangles).
    assert path_key("../x.md") == "../x"


def test_a_note_is_reachable_by_title_aliases_and_path() -> None:
    content = "---\naliases:\n  - First Alias\nalias: Old Name\n---\nbody"
    keys = RULES.note_keys(
        "The Title", content, {"aliases": ["Meta Alias", 3], "path": "notes/The Title.md"}
    )
    assert keys == {
        NoteKey("title", "the title"),
        NoteKey("alias", "first alias"),
        NoteKey("alias", "old name"),
        NoteKey("alias", "meta alias"),
        NoteKey("path", "notes/the title"),
    }


def test_an_untitled_note_without_path_has_no_key() -> None:
    assert RULES.note_keys("", "no front matter", {"path": 7, "aliases": "  "}) == set()


def test_a_reference_looks_for_its_target_as_a_title_or_as_a_path() -> None:
    source = {"path": "projects/alpha/plan.md"}
    assert RULES.reference_key(WikiRef("The Title", heading="h"), source) == "the title"
    assert RULES.reference_key(WikiRef("notes/The Title.md"), source) == "notes/the title"
    assert RULES.reference_key(WikiRef("./budget"), source) == "projects/alpha/budget"
    assert RULES.reference_key(WikiRef("./budget"), {}) == "budget"
