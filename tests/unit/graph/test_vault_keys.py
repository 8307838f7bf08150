"""The keys of vault notes and the candidates of vault references."""

from __future__ import annotations

from fortemi.graph.links.vault import Candidate, VaultKeyRules, vault_key
from fortemi.graph.links.wiki import WikiRef, references

RULES = VaultKeyRules()
KUBECTL = {"vault": "v", "path": "projects/poimen/tools/kubectl.md"}


def _keys(path: str, title: str = "T") -> set[str]:
    found = RULES.note_keys(title, "", {"vault": "v", "path": path})
    return {k.key for k in found if k.kind == "vault"}


def _candidates(target: str, source: dict[str, str] = KUBECTL) -> list[tuple[str, str]]:
    found = RULES.vault_reference(WikiRef(target), source)
    assert found is not None
    return [(c.rule, c.key.split("\x1f", 1)[1]) for c in found[1]]


def test_a_vault_note_is_keyed_by_its_path_every_suffix_its_title_and_aliases() -> None:
    assert _keys("shared/My Note.md") == {
        vault_key("v", "path", "shared/my note"),
        vault_key("v", "suffix", "my note"),
        vault_key("v", "suffix", "shared/my note"),
        vault_key("v", "title", "t"),
    }


def test_a_project_note_has_its_suffixes_and_title_once_more_with_its_project() -> None:
    keys = _keys("projects/a/My Note.md")
    assert vault_key("v", "suffix", "my note", "a") in keys
    assert vault_key("v", "suffix", "projects/a/my note", "a") in keys
    assert vault_key("v", "title", "t", "a") in keys
    assert vault_key("v", "path", "projects/a/my note", "a") not in keys  # a path is unique
    assert len(keys) == 1 + 3 + 3 + 2


def test_skill_and_index_notes_are_also_keyed_by_their_folder() -> None:
    keys = _keys("shared/skills/SKILL-x/SKILL.md")
    assert vault_key("v", "path+skill", "shared/skills/skill-x") in keys
    assert vault_key("v", "suffix+skill", "skill-x") in keys
    assert vault_key("v", "path+index", "a") in _keys("a/index.md")
    # A note named like a folder note at the vault root has no folder to stand for.
    assert not any("+index" in key for key in _keys("index.md"))


def test_notes_outside_vaults_get_no_vault_key_and_references_keep_todays_rules() -> None:
    assert all(k.kind != "vault" for k in RULES.note_keys("T", "", {"path": "a/b.md"}))
    assert RULES.vault_reference(WikiRef("b"), {"path": "a/b.md"}) is None
    assert RULES.vault_reference(WikiRef("b"), {"vault": "v"}) is None


def test_candidates_go_path_then_suffix_then_title_then_alias_own_project_first() -> None:
    sep = "\x1f"
    assert _candidates("../debugging/Pod-Crashes.md") == [
        ("path", f"path{sep}projects/poimen/debugging/pod-crashes"),
        ("path", f"path+skill{sep}projects/poimen/debugging/pod-crashes"),
        ("path", f"path+index{sep}projects/poimen/debugging/pod-crashes"),
        ("suffix", f"suffix{sep}poimen{sep}debugging/pod-crashes"),
        ("suffix", f"suffix{sep}debugging/pod-crashes"),
        ("suffix", f"suffix+skill{sep}poimen{sep}debugging/pod-crashes"),
        ("suffix", f"suffix+skill{sep}debugging/pod-crashes"),
        ("suffix", f"suffix+index{sep}poimen{sep}debugging/pod-crashes"),
        ("suffix", f"suffix+index{sep}debugging/pod-crashes"),
        ("title", f"title{sep}poimen{sep}../debugging/pod-crashes"),
        ("title", f"title{sep}../debugging/pod-crashes"),
        ("alias", f"alias{sep}poimen{sep}../debugging/pod-crashes"),
        ("alias", f"alias{sep}../debugging/pod-crashes"),
    ]
    shared = {"vault": "v", "path": "shared/x.md"}
    assert [rule for rule, _ in _candidates("y", shared)] == [
        "path", "path", "path", "suffix", "suffix", "suffix", "title", "alias",
    ]  # fmt: skip


def test_dot_dot_stops_at_the_vault_root_and_backslashes_are_separators() -> None:
    assert _candidates("../../../../shared/x")[0] == ("path", "path\x1fshared/x")
    assert _candidates("..\\..\\..\\shared\\x")[0] == ("path", "path\x1fshared/x")
    assert _candidates("/shared/x")[0] == ("path", "path\x1fshared/x")
    assert _candidates("a/../../b")[4] == ("suffix", "suffix\x1fb")


def test_a_bare_name_is_tried_in_the_source_folder_as_a_suffix_a_title_and_an_alias() -> None:
    assert [rule for rule, _ in _candidates("kubectl")] == [
        *["path"] * 3, *["suffix"] * 6, *["title"] * 2, *["alias"] * 2,
    ]  # fmt: skip
    assert _candidates(".") == []
    assert _candidates("..") == []


def test_vaults_never_share_a_key() -> None:
    one = RULES.vault_reference(WikiRef("x"), {"vault": "one", "path": "a.md"})
    two = RULES.note_keys("x", "", {"vault": "two", "path": "x.md"})
    assert one is not None
    assert not {c.key for c in one[1]} & {k.key for k in two}


def test_dendron_puts_the_label_first_and_drops_its_vault_prefix() -> None:
    dendron = {"vault": "d", "path": "root.md", "flavour": "dendron"}
    [ref] = references("[[The label|a.b.c#Head]]")
    found = RULES.vault_reference(ref, dendron)
    assert found is not None
    assert found[0] == WikiRef("a.b.c", heading="Head", label="The label")
    assert found[1][0] == Candidate("path", vault_key("d", "path", "a.b.c"))
    [ref] = references("[[dendron://notes/a.b#^blk]]")
    found = RULES.vault_reference(ref, dendron)
    assert found is not None
    assert found[0] == WikiRef("a.b", block="blk")


def test_block_ids_are_read_apart_from_headings() -> None:
    assert references("[[n#^b1]] [[n#Head#^b2|x]] [[n#a^b]]") == [
        WikiRef("n", block="b1"),
        WikiRef("n", heading="Head", block="b2", label="x"),
        WikiRef("n", heading="a^b"),
    ]
