"""Every kind of invalid policy file is refused with file:line: field: and a usable message."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from fortemi.auth.decision import ResourceType
from fortemi.auth.policy import (
    PolicyValidationError,
    load_policy_directory,
    parse_defaults,
    parse_policy,
    read_yaml,
)

from .helpers import FIXTURE_POLICIES

POIMEN = "policies/projects/poimen/_access.yaml"


def errors_of(
    text: str, *, file: str = POIMEN, kind: str = "project", name: str = "poimen"
) -> list[str]:
    """The error lines for ``text`` as the file ``file`` holding ``kind`` ``name``."""
    try:
        document, lines = read_yaml(textwrap.dedent(text), file)
        if file.endswith("default.yaml"):
            parse_defaults(document, source="file:default.yaml", file=file, lines=lines)
        else:
            parse_policy(
                document,
                resource_type=ResourceType(kind),
                name=name,
                memory=None,
                source="file:x",
                file=file,
                lines=lines,
            )
    except PolicyValidationError as exc:
        return [str(error) for error in exc.errors]
    return []


def test_a_valid_document_has_no_errors() -> None:
    assert errors_of("project: poimen\naccess_level: public\n") == []


def test_a_wrong_enum_value_names_file_line_field_and_choices() -> None:
    text = """\
        version: 1
        project: poimen
        owner_group: platform-team
        access_level: grup
        """
    assert errors_of(text) == [
        f"{POIMEN}:4: access_level: must be one of private, group, public (got 'grup')"
    ]


def test_invalid_yaml_gives_its_line() -> None:
    text = """\
        project: poimen
        access_level: public
        allowed_groups: [a, b
        required_role: viewer
        """
    (error,) = errors_of(text)
    assert error.startswith(f"{POIMEN}:4: invalid YAML:")


def test_an_unknown_key_is_an_error_with_a_suggestion() -> None:
    text = "project: poimen\naccess_level: public\nalowed_groups: [devops-team]\n"
    assert errors_of(text) == [
        f"{POIMEN}:3: alowed_groups: unknown key; did you mean 'allowed_groups'? allowed: "
        "access_level, actions, allowed_groups, deny, grant, memory, owner_group, project, "
        "required_permission, required_role, skill, version"
    ]


def test_an_unknown_key_deep_inside_is_located_too() -> None:
    text = """\
        project: poimen
        access_level: public
        actions:
          write: {required_role: editor}
          wirte: {required_role: admin}
        deny:
          group: [contractors]
        """
    errors = errors_of(text)
    assert errors[0].startswith(f"{POIMEN}:5: actions.wirte: unknown key; did you mean 'write'?")
    assert errors[1].startswith(f"{POIMEN}:7: deny.group: unknown key; did you mean 'groups'?")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "allowed_groups: devops-team",
            "3: allowed_groups: must be a list of strings, [] for none (got 'devops-team')",
        ),
        ("allowed_groups: [ok, 7]", "3: allowed_groups[1]: must be a string (got 7)"),
        ("required_role: true", "3: required_role: must be a string (got true)"),
        ("owner_group: ''", "3: owner_group: must be 1 to 200 characters (got 0)"),
        (f"owner_group: {'x' * 201}", "3: owner_group: must be 1 to 200 characters (got 201)"),
        (
            "owner_group: ' ops'",
            "3: owner_group: must not start or end with whitespace (got ' ops')",
        ),
        ("deny: [mallory]", "3: deny: must be a mapping of keys to values (got a list)"),
        (
            "grant: {roles: auditor}",
            "3: grant.roles: must be a list of strings, [] for none (got 'auditor')",
        ),
        (
            "actions: {read: editor}",
            "3: actions.read: must be a mapping of keys to values (got 'editor')",
        ),
    ],
)
def test_a_wrong_type_names_the_field(line: str, expected: str) -> None:
    assert errors_of(f"project: poimen\naccess_level: public\n{line}\n") == [f"{POIMEN}:{expected}"]


def test_a_missing_access_level_is_an_error() -> None:
    assert errors_of("project: poimen\n") == [
        f"{POIMEN}:1: access_level: missing; must be one of private, group, public"
    ]


def test_the_name_must_match_the_folder() -> None:
    assert errors_of("project: poimenn\naccess_level: public\n") == [
        f"{POIMEN}:1: project: must match the folder name 'poimen' (got 'poimenn')"
    ]


def test_the_resource_kind_must_match_the_folder() -> None:
    errors = errors_of("skill: poimen\naccess_level: public\n")
    assert errors == [f"{POIMEN}:1: skill: this is a project policy, so it says project: poimen"]


def test_a_file_policy_must_name_its_resource() -> None:
    assert errors_of("access_level: public\n") == [
        f"{POIMEN}:1: project: missing; every policy names its resource (project: poimen)"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("version: 2", "1: version: unsupported format version 2; only 1 exists"),
        ("version: '1'", "1: version: must be the integer 1 (got '1')"),
        ("version: true", "1: version: must be the integer 1 (got true)"),
    ],
)
def test_only_format_version_1_is_accepted(text: str, expected: str) -> None:
    assert errors_of(f"{text}\nproject: poimen\naccess_level: public\n") == [f"{POIMEN}:{expected}"]


def test_a_duplicate_key_is_an_error_not_the_last_value() -> None:
    text = "project: poimen\naccess_level: private\naccess_level: public\n"
    assert errors_of(text) == [
        f"{POIMEN}:3: access_level: duplicate key; YAML would silently keep only the last one"
    ]


def test_several_errors_are_all_reported() -> None:
    assert len(errors_of("project: poimen\naccess_level: grup\nrequired_role: 3\n")) == 2


@pytest.mark.parametrize(
    ("kind", "name", "expected"),
    [
        ("skill", "private-debug", "skill names start with SKILL- and go on"),
        ("skill", "SKILL-", "skill names start with SKILL- and go on"),
        ("memory", "Main", "memory names match ^[a-z][a-z0-9_]{0,39}$ (got 'Main')"),
        ("project", "p" * 201, "a project name is 1 to 200 characters"),
    ],
)
def test_resource_names_follow_their_rules(kind: str, name: str, expected: str) -> None:
    (error,) = errors_of(
        f"access_level: public\n{kind}: {name}\n", file="f.yaml", kind=kind, name=name
    )
    assert error.startswith(f"f.yaml:2: {kind}: {expected}")


def test_default_yaml_must_define_system_and_audit() -> None:
    errors = errors_of("version: 1\ndefault: deny\n", file="policies/default.yaml")
    assert errors == [
        "policies/default.yaml:1: system: missing; default.yaml must say who may use the system resource",
        "policies/default.yaml:1: audit: missing; default.yaml must say who may use the audit resource",
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("default: maybe", "2: default: must be one of deny, allow (got 'maybe')"),
        (
            "roles: [viewer, editor, viewer]",
            "2: roles[2]: 'viewer' appears twice; the order must be strict",
        ),
        ("roles: viewer", "2: roles: must be a list of roles, lowest first (got 'viewer')"),
        ("rules: []", "2: rules: unknown key; did you mean 'roles'?"),
    ],
)
def test_default_yaml_fields_are_checked(line: str, expected: str) -> None:
    text = (
        f"version: 1\n{line}\nsystem: {{access_level: public}}\naudit: {{access_level: private}}\n"
    )
    (error,) = errors_of(text, file="policies/default.yaml")
    assert error.startswith(f"policies/default.yaml:{expected}")


def test_a_default_yaml_section_takes_no_resource_name() -> None:
    text = "system: {access_level: public, project: x}\naudit: {access_level: private}\n"
    (error,) = errors_of(text, file="policies/default.yaml")
    assert error.startswith("policies/default.yaml:1: system.project: unknown key")


# -- whole directories ----------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the fixture policies to break."""
    directory = tmp_path / "policies"
    shutil.copytree(FIXTURE_POLICIES, directory)
    return directory


def test_a_misplaced_yaml_file_is_an_error(tree: Path) -> None:
    (tree / "projects" / "poimen" / "_acess.yaml").write_text("access_level: public\n")
    (tree / "project").mkdir()
    (tree / "project" / "x.yaml").write_text("access_level: public\n")
    (tree / "projects" / "poimen" / "README.md").write_text("not yaml, not a policy\n")
    messages = [str(e) for e in load_policy_directory(tree).errors]
    assert [m.split(": ")[0] for m in messages] == [
        f"{tree}/project/x.yaml",
        f"{tree}/projects/poimen/_acess.yaml",
    ]
    assert all("not a policy location" in m for m in messages)


def test_hidden_files_and_folders_are_skipped(tree: Path) -> None:
    (tree / ".swap.yaml").write_text("{{{")
    (tree / "..data").mkdir()
    (tree / "..data" / "default.yaml").write_text("{{{")
    assert load_policy_directory(tree).errors == []


def test_a_missing_directory_is_reported(tmp_path: Path) -> None:
    contents = load_policy_directory(tmp_path / "absent")
    assert [str(e) for e in contents.errors] == [
        f"{tmp_path}/absent: the policy directory does not exist"
    ]


def test_a_missing_default_yaml_is_reported(tree: Path) -> None:
    (tree / "default.yaml").unlink()
    contents = load_policy_directory(tree)
    assert [str(e) for e in contents.errors] == [
        f"{tree}/default.yaml: missing: without default.yaml every request is denied"
    ]
    assert not contents.found_defaults_file


def test_an_invalid_file_is_left_out_and_the_rest_loaded(tree: Path) -> None:
    (tree / "projects" / "poimen" / "_access.yaml").write_text(
        "project: poimen\naccess_level: grup\n"
    )
    contents = load_policy_directory(tree)
    assert [str(e) for e in contents.errors] == [
        f"{tree}/projects/poimen/_access.yaml:2: access_level: must be one of private, group, "
        "public (got 'grup')"
    ]
    assert sorted(p.name or "" for p in contents.policies) == [
        "SKILL-kubernetes-debugging",
        "SKILL-private-debug",
        "default",
    ]
