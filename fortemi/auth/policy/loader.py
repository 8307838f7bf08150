"""Reading a policy directory: YAML with line numbers, and where each file must live.

Layout (``FORTEMI_POLICY_DIR``)::

    default.yaml                          the default decision, roles, system and audit
    projects/<project>/_access.yaml       a project, in every memory
    shared/skills/<skill>/_access.yaml    a shared skill (SKILL-*), in every memory
    memories/<memory>.yaml                a memory (its notes outside projects and skills)

Any other ``*.yaml``/``*.yml`` file is an error rather than ignored, so a misnamed
``_acess.yaml`` cannot silently leave a project without its rules. Names beginning with
a dot are skipped (editor swap files, and the ``..data`` links of a Kubernetes ConfigMap
mount, whose files also appear at the top level).

YAML is parsed with PyYAML's safe loader only (libyaml's CSafeLoader when PyYAML was
built with it: ten times faster, same safety). The node tree is composed first to learn
each field's line; duplicate keys, which YAML would silently resolve to the last value,
are errors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

from fortemi.auth.decision import ResourceType
from fortemi.auth.policy.model import Defaults, Policy, PolicyError
from fortemi.auth.policy.validation import (
    LineMap,
    PolicyValidationError,
    field_name,
    parse_defaults,
    parse_policy,
)

__all__ = ["DirectoryContents", "load_policy_directory", "read_yaml"]

# Both construct only plain data (SafeConstructor); the C one parses with libyaml.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SUFFIXES = (".yaml", ".yml")
_MAX_DEPTH = 3  # shared/skills/<skill>/ is the deepest folder that holds a policy
_LAYOUT = (
    "default.yaml, projects/<project>/_access.yaml, shared/skills/<skill>/_access.yaml "
    "or memories/<memory>.yaml"
)


def read_yaml(text: str, file: str) -> tuple[object, LineMap]:
    """The document in ``text`` and the line of each of its fields.

    Raises :class:`PolicyValidationError` for invalid YAML (with its line), for more than
    one document, and for duplicate keys.
    """
    loader = _SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines: dict[tuple[str | int, ...], int] = {}
        errors: list[PolicyError] = []
        _index(node, (), lines, errors, file, set())
        if errors:
            raise PolicyValidationError(errors)
        return loader.construct_document(node), lines
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = None if mark is None else mark.line + 1
        problem = " ".join(part for part in (exc.context, exc.problem) if part)
        raise PolicyValidationError(
            [PolicyError(file, line, None, f"invalid YAML: {problem}")]
        ) from exc
    except yaml.YAMLError as exc:
        raise PolicyValidationError(
            [PolicyError(file, None, None, f"invalid YAML: {exc}")]
        ) from exc
    finally:
        loader.dispose()


def _index(
    node: yaml.Node,
    path: tuple[str | int, ...],
    lines: dict[tuple[str | int, ...], int],
    errors: list[PolicyError],
    file: str,
    seen: set[int],
) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in seen:  # an alias: indexed where its anchor is (and never walked twice)
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in keys:
                errors.append(
                    PolicyError(
                        file,
                        key_node.start_mark.line + 1,
                        field_name((*path, key)),
                        "duplicate key; YAML would silently keep only the last one",
                    )
                )
            keys.add(key)
            lines[(*path, key)] = key_node.start_mark.line + 1
            _index(value_node, (*path, key), lines, errors, file, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(item, (*path, i), lines, errors, file, seen)


@dataclass
class DirectoryContents:
    """Everything one pass over a policy directory found."""

    defaults: Defaults | None = None  # None: default.yaml missing or invalid
    policies: list[Policy] = field(default_factory=list)
    errors: list[PolicyError] = field(default_factory=list)
    found_defaults_file: bool = False


def load_policy_directory(directory: Path) -> DirectoryContents:
    """Parse every policy file under ``directory``; blocking I/O (run it in a thread).

    Never raises for bad content: each invalid file is left out and its errors recorded.
    File names in errors are ``directory / relative path`` as ``directory`` was given.
    """
    contents = DirectoryContents()
    if not directory.is_dir():
        contents.errors.append(
            PolicyError(str(directory), None, None, "the policy directory does not exist")
        )
        return contents
    for relative in _policy_files(directory):
        _load_file(directory, relative, contents)
    if not contents.found_defaults_file:
        contents.errors.append(
            PolicyError(
                str(directory / "default.yaml"),
                None,
                None,
                "missing: without default.yaml every request is denied",
            )
        )
    return contents


def _policy_files(directory: Path) -> list[PurePosixPath]:
    found: list[PurePosixPath] = []
    # followlinks: ConfigMap-style symlinked folders hold real policies; depth is bounded,
    # so a symlink cycle cannot make this walk forever.
    for root, dirs, files in os.walk(directory, followlinks=True):
        relative_root = PurePosixPath(Path(root).relative_to(directory).as_posix())
        depth = 0 if relative_root == PurePosixPath(".") else len(relative_root.parts)
        dirs[:] = [] if depth >= _MAX_DEPTH else [d for d in dirs if not d.startswith(".")]
        found.extend(
            relative_root / name
            for name in files
            if name.endswith(_SUFFIXES) and not name.startswith(".")
        )
    return sorted(found)


def _load_file(directory: Path, relative: PurePosixPath, contents: DirectoryContents) -> None:
    file = str(directory / relative)
    source = f"file:{relative}"
    parts = relative.parts
    target: tuple[ResourceType, str] | None = None
    if parts == ("default.yaml",):
        contents.found_defaults_file = True
    elif len(parts) == 3 and parts[0] == "projects" and parts[2] == "_access.yaml":
        target = (ResourceType.PROJECT, parts[1])
    elif len(parts) == 4 and parts[:2] == ("shared", "skills") and parts[3] == "_access.yaml":
        target = (ResourceType.SKILL, parts[2])
    elif len(parts) == 2 and parts[0] == "memories" and relative.suffix == ".yaml":
        target = (ResourceType.MEMORY, relative.stem)
    else:
        contents.errors.append(
            PolicyError(file, None, None, f"not a policy location; policies live in {_LAYOUT}")
        )
        return
    try:
        text = (directory / relative).read_text(encoding="utf-8")
        document, lines = read_yaml(text, file)
        if target is None:
            contents.defaults = parse_defaults(document, source=source, file=file, lines=lines)
        else:
            contents.policies.append(
                parse_policy(
                    document,
                    resource_type=target[0],
                    name=target[1],
                    memory=None,
                    source=source,
                    file=file,
                    lines=lines,
                    name_origin="file name" if target[0] is ResourceType.MEMORY else "folder name",
                )
            )
    except PolicyValidationError as exc:
        contents.errors.extend(exc.errors)
    except (OSError, UnicodeDecodeError) as exc:
        contents.errors.append(PolicyError(file, None, None, f"cannot read: {exc}"))
