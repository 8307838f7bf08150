"""Reading vault files: paths, owners, titles, aliases, tags and access files."""

from __future__ import annotations

from pathlib import Path

import pytest

from fortemi.auth.decision import ResourceType
from fortemi.platform.errors import BadUserInput
from fortemi.wiki.vaults.files import (
    AccessFile,
    VaultNote,
    VaultProblem,
    parse_access,
    parse_note,
    scan,
    validate_path,
    validate_vault_name,
)

LIMIT = 1 << 20


def note(path: str, text: str | bytes, **extra: object) -> VaultNote:
    data = text.encode() if isinstance(text, str) else text
    parsed = parse_note(path, data, vault="v", max_bytes=LIMIT, **extra)  # type: ignore[arg-type]
    assert isinstance(parsed, VaultNote), parsed
    return parsed


def problem(path: str, data: bytes, max_bytes: int = LIMIT) -> VaultProblem:
    parsed = parse_note(path, data, vault="v", max_bytes=max_bytes)
    assert isinstance(parsed, VaultProblem), parsed
    return parsed


@pytest.mark.parametrize(
    "path",
    [
        "../etc/passwd.md",
        "a/../../b.md",
        "/etc/passwd.md",
        "C:/x.md",
        "a\\b.md",
        "a\x00b.md",
        "a//b.md",
        "./a.md",
        ".obsidian/workspace.md",
        "notes/.trash/old.md",
        "",
        "a\nb.md",
    ],
)
def test_paths_outside_or_hidden_in_the_vault_are_refused_with_a_reason(path: str) -> None:
    found = validate_path(path)

    assert isinstance(found, VaultProblem)
    assert found.reason == "bad_path"
    assert found.message


def test_a_relative_posix_path_is_accepted_as_written() -> None:
    assert validate_path("projects/poimen/tools/kubectl.md") == "projects/poimen/tools/kubectl.md"
    assert validate_path("Notes with spaces/Ünïcode.md") == "Notes with spaces/Ünïcode.md"


@pytest.mark.parametrize("name", ["", "-x", "a/b", "a b", "x" * 65, "..", "é"])
def test_a_vault_name_outside_the_pattern_is_bad_user_input(name: str) -> None:
    with pytest.raises(BadUserInput, match="not a vault name"):
        validate_vault_name(name)


def test_projects_and_skills_come_from_the_folder_and_shared_concepts_have_neither() -> None:
    assert (note("projects/p/a/b.md", "x").project, note("projects/p/a/b.md", "x").skill) == (
        "p",
        None,
    )
    skill = note("shared/skills/SKILL-x/SKILL.md", "x")
    assert (skill.project, skill.skill) == (None, "SKILL-x")
    for path in ("shared/concepts/c.md", "root.md", "projects/readme.md"):
        assert (note(path, "x").project, note(path, "x").skill) == (None, None)


def test_a_skills_folder_not_named_skill_dash_is_refused_not_widened() -> None:
    found = problem("shared/skills/testing/SKILL.md", b"x")

    assert found.reason == "bad_skill_folder"
    assert "SKILL-" in found.message


def test_title_is_front_matter_then_first_h1_then_file_name() -> None:
    assert note("a.md", "---\ntitle: From front\n---\n# Heading\n").title == "From front"
    assert note("a.md", "intro\n\n## Sub\n\n# The *first* `h1`\n").title == "The first h1"
    assert note("dir/file name.md", "no heading\n").title == "file name"


def test_aliases_are_strings_and_metadata_carries_path_vault_aliases_and_flavour() -> None:
    parsed = note(
        "a/b.md", "---\naliases:\n  - one\n  - 2\n  - '#3 spot'\n---\nbody\n", flavour="dendron"
    )

    assert parsed.aliases == ("one", "2", "#3 spot")
    assert parsed.metadata == {
        "path": "a/b.md",
        "vault": "v",
        "aliases": ["one", "2", "#3 spot"],
        "flavour": "dendron",
    }
    assert "flavour" not in note("a.md", "x").metadata


def test_front_matter_tags_as_a_list_or_a_string_then_inline_tags() -> None:
    listed = note("a.md", "---\ntags: [alpha, '#beta']\n---\ntext #gamma\n")
    spaced = note("a.md", "---\ntags: alpha, beta gamma\n---\n")

    assert listed.tags == ("alpha", "beta", "gamma")
    assert spaced.tags == ("alpha", "beta", "gamma")


def test_inline_tags_skip_code_headings_links_and_wiki_headings() -> None:
    text = (
        "# Title #notatag\n\n"
        "A #real tag and #nested/tag, not C# or #123 or a#b.\n\n"
        "See [[pod-crashes#Pod Crashes]] and [a #linked](https://x.test/#frag).\n\n"
        "Inline `#code` here.\n\n"
        "```bash\n# a comment\nkubectl get pods  # #also-comment\n```\n\n"
        "    # indented code #indented\n"
    )

    assert note("a.md", text).tags == ("real", "nested/tag")


def test_content_is_the_whole_text_without_a_byte_order_mark() -> None:
    parsed = note("a.md", "\ufeff---\ntitle: T\n---\nbody\n")

    assert parsed.content == "---\ntitle: T\n---\nbody\n"
    assert parsed.title == "T"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "binary"),
        (b"caf\xe9 au lait\n", "not_utf8"),
        (b"x" * 101, "too_large"),
        (b"---\ntitle: [unclosed\n---\nbody\n", "bad_front_matter"),
        (b"---\n- a list\n---\nbody\n", "bad_front_matter"),
        (b"---\naliases: {a: 1}\n---\n", "bad_front_matter"),
    ],
)
def test_files_that_cannot_be_read_as_notes_give_their_reason(data: bytes, reason: str) -> None:
    found = problem("a.md", data, max_bytes=100)

    assert found.reason == reason
    assert found.path == "a.md"


def test_a_front_matter_error_names_its_line_in_the_file() -> None:
    found = problem("a.md", b"---\ntitle: ok\nbad: [\n---\n")

    assert found.line is not None

    assert found.line >= 3


def access(path: str, text: str) -> AccessFile | VaultProblem:
    return parse_access(path, text.encode(), memory="m", max_bytes=LIMIT)


def test_an_access_file_is_its_projects_policy_as_written() -> None:
    parsed = access("projects/p/_access.yaml", "version: 1\nproject: p\naccess_level: public\n")

    assert isinstance(parsed, AccessFile)
    assert (parsed.resource_type, parsed.name) == (ResourceType.PROJECT, "p")
    assert parsed.document == {"version": 1, "project": "p", "access_level": "public"}
    assert parsed.warnings == ()


def test_no_version_and_owner_are_accepted_with_warnings_naming_the_file() -> None:
    parsed = access(
        "shared/skills/SKILL-x/_access.yaml",
        "skill: SKILL-x\nowner: ml-team\naccess_level: private\n",
    )

    assert isinstance(parsed, AccessFile)
    assert parsed.document == {
        "skill": "SKILL-x",
        "owner_group": "ml-team",
        "access_level": "private",
    }
    assert {w.reason for w in parsed.warnings} == {
        "policy_without_version",
        "policy_owner_renamed",
    }
    assert all(w.path == "shared/skills/SKILL-x/_access.yaml" for w in parsed.warnings)


@pytest.mark.parametrize(
    ("text", "line", "field", "said"),
    [
        (
            "version: 1\nproject: p\nowner: a\nowner_group: b\naccess_level: public\n",
            3,
            "owner",
            "keep `owner_group:` only",
        ),
        (
            "version: 1\nproject: p\naccess_level: public\nallowed_groups: team\n",
            4,
            "allowed_groups",
            "must be a list",
        ),
        # Two errors: the missing key (line 1, the document) comes first; both are said.
        ("version: 1\nproject: p\nacess_level: public\n", 1, "access_level", "acess_level"),
        ("version: 1\nproject: other\naccess_level: public\n", 2, "project", "folder name"),
        ("version: 1\nproject: p\naccess_level: [\n", 4, None, "invalid YAML"),
    ],
)
def test_a_policy_that_does_not_parse_is_refused_with_line_and_field(
    text: str, line: int, field: str | None, said: str
) -> None:
    found = access("projects/p/_access.yaml", text)

    assert isinstance(found, VaultProblem)
    assert found.reason == "bad_policy"
    assert (found.line, found.field) == (line, field)
    assert said in found.message


def test_an_access_file_elsewhere_is_refused_as_not_a_policy_location() -> None:
    found = access("projects/p/sub/_access.yaml", "version: 1\naccess_level: public\n")

    assert isinstance(found, VaultProblem)
    assert found.reason == "bad_policy_location"


def test_scan_reads_notes_and_access_files_and_skips_hidden_and_other_files(
    tmp_path: Path,
) -> None:
    for name, data in {
        "a.md": b"a",
        "sub/b.md": b"b",
        "projects/p/_access.yaml": b"x",
        "policies/default.yaml": b"y",
        "image.png": b"\x89PNG",
        ".obsidian/app.md": b"hidden",
        "sub/.trash/c.md": b"hidden",
        ".hidden.md": b"hidden",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")

    found = dict(scan(tmp_path, max_bytes=LIMIT))

    assert found == {
        "a.md": b"a",
        "policies/default.yaml": b"y",
        "projects/p/_access.yaml": b"x",
        "sub/b.md": b"b",
    }
    assert list(found) == sorted(found)
