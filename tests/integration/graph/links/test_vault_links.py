"""Wiki links inside vaults: the homelab fixture's table, the shapes users write, notes
arriving in any order, deletes, Dendron, reachable sets and the vault's status."""

from __future__ import annotations

import asyncio
from uuid import UUID

import pytest

from fortemi.graph.links import LinkService
from fortemi.platform.database import Database
from fortemi.platform.notes import NameSet, NoteDraft, NoteService, NoteVisibility
from tests.integration.graph.links.vault_fixtures import (
    VAULTS,
    StoredLink,
    stored_links,
    sync,
    vault_files,
)

HOMELAB = vault_files(VAULTS / "homelab" / "vault")
P = "projects/poimen/"
K8S_SKILL = "shared/skills/SKILL-kubernetes-debugging/SKILL.md"

# The fixture README's table, L1-L11: (source, target as written) -> how it resolves.
HOMELAB_LINKS = {
    (f"{P}index.md", "tools/kubectl.md"): StoredLink(
        "tools/kubectl.md", "path", f"{P}tools/kubectl.md", "memory"
    ),
    (f"{P}index.md", "memories/ownership.md"): StoredLink(
        "memories/ownership.md", "path", f"{P}memories/ownership.md", "memory"
    ),
    (f"{P}tools/kubectl.md", "../debugging/pod-crashes.md"): StoredLink(
        "../debugging/pod-crashes.md", "path", f"{P}debugging/pod-crashes.md", "memory"
    ),
    (f"{P}tools/kubectl.md", "../../shared/skills/SKILL-kubernetes-debugging"): StoredLink(
        "../../shared/skills/SKILL-kubernetes-debugging", "suffix", K8S_SKILL, "skill"
    ),
    (f"{P}debugging/pod-crashes.md", "../../memories/ownership.md"): StoredLink(
        "../../memories/ownership.md", "suffix", f"{P}memories/ownership.md", "memory"
    ),
    (f"{P}memories/ownership.md", "../tools/kubectl.md"): StoredLink(
        "../tools/kubectl.md", "path", f"{P}tools/kubectl.md", "memory"
    ),
    ("projects/rust-guide/index.md", "memories/ownership.md"): StoredLink(
        "memories/ownership.md", "path", "projects/rust-guide/memories/ownership.md", "memory"
    ),
    (
        "projects/rust-guide/memories/ownership.md",
        "../../shared/concepts/design-patterns.md",
    ): StoredLink(
        "../../shared/concepts/design-patterns.md",
        "suffix",
        "shared/concepts/design-patterns.md",
        "shared_concept",
    ),
    (K8S_SKILL, "kubectl"): StoredLink(
        "kubectl", "suffix", f"{P}tools/kubectl.md", "memory", label="the kubectl guide"
    ),
    (K8S_SKILL, "../../projects/poimen/tools/kubectl.md"): StoredLink(
        "../../projects/poimen/tools/kubectl.md", "suffix", f"{P}tools/kubectl.md", "memory"
    ),
    (K8S_SKILL, "pod-crashes"): StoredLink(
        "pod-crashes",
        "suffix",
        f"{P}debugging/pod-crashes.md",
        "memory",
        heading="Pod Crashes in CrashLoopBackOff",
    ),
}

REACHABLE = {
    "poimen": {
        f"{P}index.md",
        f"{P}tools/kubectl.md",
        f"{P}debugging/pod-crashes.md",
        f"{P}memories/ownership.md",
        K8S_SKILL,
    },
    "rust-guide": {
        "projects/rust-guide/index.md",
        "projects/rust-guide/memories/ownership.md",
        "shared/concepts/design-patterns.md",
    },
    "ai-infra": {"projects/ai-infra/index.md"},
}


def _paths(ids: dict[str, UUID], found: set[UUID]) -> set[str]:
    by_id = {note_id: path for path, note_id in ids.items()}
    return {by_id[note_id] for note_id in found}


async def test_homelab_links_resolve_exactly_as_the_fixture_readme_states(
    notes: NoteService, db: Database, memory: str
) -> None:
    await sync(notes, memory, "homelab", HOMELAB)
    # C1, inside a fenced bash block, is not a link: only L1-L11 are stored.
    assert await stored_links(db, memory) == HOMELAB_LINKS


@pytest.mark.parametrize("one_by_one", [True, False])
async def test_homelab_links_resolve_the_same_when_the_notes_arrive_in_reverse_order(
    notes: NoteService, db: Database, memory: str, one_by_one: bool
) -> None:
    files = list(reversed(HOMELAB))
    if one_by_one:
        for file in files:
            await sync(notes, memory, "homelab", [file])
    else:
        await sync(notes, memory, "homelab", files)
    assert await stored_links(db, memory) == HOMELAB_LINKS


async def test_l5_moves_to_its_own_projects_note_as_soon_as_that_note_arrives(
    notes: NoteService, db: Database, memory: str
) -> None:
    files = dict(HOMELAB)
    first = ["projects/rust-guide/memories/ownership.md", f"{P}debugging/pod-crashes.md"]
    for path in first:
        await sync(notes, memory, "homelab", [(path, files[path])])
    before = (await stored_links(db, memory))[(first[1], "../../memories/ownership.md")]
    # Only the rust-guide note has the suffix so far: the link takes it (Obsidian would),
    assert before.to == first[0]
    await sync(notes, memory, "homelab", [(f"{P}memories/ownership.md", "# Ownership\n")])
    after = (await stored_links(db, memory))[(first[1], "../../memories/ownership.md")]
    # and leaves it for its own project's note as soon as that one exists.
    assert (after.to, after.resolution) == (f"{P}memories/ownership.md", "suffix")


async def test_reachable_sets_are_the_fixture_readmes(
    notes: NoteService, link_service: LinkService, memory: str
) -> None:
    ids = await sync(notes, memory, "homelab", HOMELAB)
    for project, expected in REACHABLE.items():
        found = await link_service.reachable(memory, "homelab", project)
        assert _paths(ids, found) == expected, project
    assert await link_service.reachable(memory, "homelab", "no-such-project") == set()
    assert await link_service.reachable(memory, "other-vault", "poimen") == set()


async def test_a_shared_note_linking_into_another_project_never_opens_it(
    notes: NoteService, link_service: LinkService, memory: str
) -> None:
    ids = await sync(
        notes,
        memory,
        "v",
        [
            ("projects/a/start.md", "[[hub]] and [[../../shared/loop]]"),
            ("shared/hub.md", "[[deeper]] [[projects/b/secret]] [[start]]"),
            ("shared/more/deeper.md", "[[hub]] [[../../projects/b/other]]"),
            ("shared/loop.md", "[[hub]]"),
            ("shared/unreached.md", "[[start]]"),
            ("projects/b/secret.md", "[[hub]]"),
            ("projects/b/other.md", "text"),
        ],
    )
    found = _paths(ids, await link_service.reachable(memory, "v", "a"))
    assert found == {
        "projects/a/start.md",
        "shared/hub.md",
        "shared/more/deeper.md",
        "shared/loop.md",
    }
    found_b = _paths(ids, await link_service.reachable(memory, "v", "b"))
    assert found_b == {
        "projects/b/secret.md",
        "projects/b/other.md",
        "shared/hub.md",
        "shared/more/deeper.md",
    }
    # A deleted shared note is not reached, nor what only it led to.
    await notes.delete(memory, ids["shared/hub.md"], actor="t")
    found = _paths(ids, await link_service.reachable(memory, "v", "a"))
    assert found == {"projects/a/start.md", "shared/loop.md"}


SHAPES = [
    ("projects/a/My Note.md", "# My Note\n\n## Part Two\n\ntext ^abc123\n"),
    ("projects/a/folder/index.md", "# Folder"),
    ("projects/a/sub/deep/file.md", "deep"),
    ("projects/a/rc.md", "---\ntitle: Release Checklist\naliases: [ship list]\n---\nsteps"),
    ("projects/a/other.md", "---\ntitle: my note\n---\nanother note titled like the file"),
    ("projects/b/dup.md", "b"),
    ("projects/c/dup.md", "c"),
    ("shared/skills/SKILL-x/SKILL.md", "skill"),
    ("shared/concepts/idea.md", "idea"),
    (
        "projects/a/src.md",
        "[[my note]] [[ MY   NOTE.md |shown]] [[My Note#Part Two]] [[my note.md#^abc123]]\n\n"
        "[[sub\\deep\\file]] [[folder]] [[../../shared/skills/SKILL-x]] [[idea.md]]\n\n"
        "[[Nothing Here]] [[dup]] [[Release Checklist]] [[ship list]]\n\n"
        "`[[in a code span]]`\n\n```\n[[in a fence]]\n```\n\n    [[indented code]]\n",
    ),
]


async def test_the_shapes_users_write_resolve_by_the_vault_rules(
    notes: NoteService, db: Database, memory: str
) -> None:
    await sync(notes, memory, "v", SHAPES)
    found = {
        target: link
        for (source, target), link in (await stored_links(db, memory)).items()
        if source == "projects/a/src.md"
    }
    note = "projects/a/My Note.md"
    assert found == {
        "my note": StoredLink("my note", "path", note, "memory"),
        "MY   NOTE.md": StoredLink("MY   NOTE.md", "path", note, "memory", label="shown"),
        "My Note": StoredLink("My Note", "path", note, "memory", heading="Part Two"),
        "my note.md": StoredLink("my note.md", "path", note, "memory", block="abc123"),
        "sub\\deep\\file": StoredLink(
            "sub\\deep\\file", "path", "projects/a/sub/deep/file.md", "memory"
        ),
        "folder": StoredLink("folder", "path", "projects/a/folder/index.md", "memory"),
        "../../shared/skills/SKILL-x": StoredLink(
            "../../shared/skills/SKILL-x", "path", "shared/skills/SKILL-x/SKILL.md", "skill"
        ),
        "idea.md": StoredLink("idea.md", "suffix", "shared/concepts/idea.md", "shared_concept"),
        "Nothing Here": StoredLink("Nothing Here", "dangling", None, "unknown", matches=0),
        "dup": StoredLink("dup", "ambiguous", None, "unknown", matches=2),
        "Release Checklist": StoredLink("Release Checklist", "title", "projects/a/rc.md", "memory"),
        "ship list": StoredLink("ship list", "alias", "projects/a/rc.md", "memory"),
    }


async def test_headings_and_blocks_are_stored_apart(
    notes: NoteService, db: Database, memory: str
) -> None:
    await sync(
        notes,
        memory,
        "v",
        [
            ("n.md", "# N"),
            ("s.md", "[[n#Part]] x [[n.md#^blk]] y [[n#Part#^b2|see]]"),
        ],
    )
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT heading, block, label, resolution FROM wiki_link ORDER BY ordinal"
        )
    assert [tuple(row) for row in rows] == [
        ("Part", None, None, "path"),
        (None, "blk", None, "path"),
        ("Part", "b2", "see", "path"),
    ]


async def test_deleting_a_target_makes_its_links_fall_to_the_next_rule_or_dangle(
    notes: NoteService, db: Database, memory: str
) -> None:
    ids = await sync(notes, memory, "v", SHAPES)
    src = "projects/a/src.md"

    async def link(target: str) -> StoredLink:
        return (await stored_links(db, memory))[(src, target)]

    await notes.delete(memory, ids["projects/a/My Note.md"], actor="t")
    # The file is gone: "my note" is now the other note's title.
    fallen = await link("my note")
    assert (fallen.resolution, fallen.to) == ("title", "projects/a/other.md")
    await notes.delete(memory, ids["projects/a/other.md"], actor="t")
    assert (await link("my note")).resolution == "dangling"
    await notes.restore(memory, ids["projects/a/My Note.md"], actor="t")
    back = await link("my note")
    assert (back.resolution, back.to) == ("path", "projects/a/My Note.md")
    # One of two ambiguous candidates gone: the other wins.
    await notes.delete(memory, ids["projects/b/dup.md"], actor="t")
    dup = await link("dup")
    assert (dup.resolution, dup.to, dup.matches) == ("suffix", "projects/c/dup.md", 1)


async def test_dendron_links_put_the_label_first_and_name_notes_by_dot_hierarchy(
    notes: NoteService, db: Database, memory: str
) -> None:
    await sync(
        notes,
        memory,
        "d",
        [
            ("root.md", "[[The C note|a.b.c]] [[dendron://notes/a.b#Head]] [[x.y#^blk]]"),
            ("a.b.md", "# A B\n## Head"),
            ("a.b.c.md", "# C"),
            ("x.y.md", "text ^blk"),
        ],
        flavour="dendron",
    )
    assert await stored_links(db, memory) == {
        ("root.md", "a.b.c"): StoredLink(
            "a.b.c", "path", "a.b.c.md", "shared_concept", label="The C note"
        ),
        ("root.md", "a.b"): StoredLink("a.b", "path", "a.b.md", "shared_concept", heading="Head"),
        ("root.md", "x.y"): StoredLink("x.y", "path", "x.y.md", "shared_concept", block="blk"),
    }


async def test_vaults_never_meet_and_notes_outside_vaults_keep_todays_rules(
    notes: NoteService, db: Database, memory: str
) -> None:
    await sync(notes, memory, "one", [("projects/a/kubectl.md", "# kubectl")])
    await sync(notes, memory, "two", [("projects/a/ref.md", "[[kubectl]] [[Loose]]")])
    loose = await notes.create(
        memory, NoteDraft(title="Loose", content="[[kubectl]] [[projects/a/kubectl]]"), actor="t"
    )
    found = await stored_links(db, memory)
    # Vault "two" has no kubectl, and a note outside the vault is not among its notes.
    assert found[("projects/a/ref.md", "kubectl")].resolution == "dangling"
    assert found[("projects/a/ref.md", "Loose")].resolution == "dangling"
    # Outside vaults, a title or a path finds the vault note as before.
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT target, resolution, target_type, target_id IS NOT NULL AS resolved"
            " FROM wiki_link WHERE source_id = $1 ORDER BY ordinal",
            loose.id,
        )
    assert [tuple(row) for row in rows] == [
        ("kubectl", "title", "unknown", True),
        ("projects/a/kubectl", "path", "unknown", True),
    ]


async def test_foam_docs_resolve_all_but_two_links_that_name_no_file(
    notes: NoteService, link_service: LinkService, memory: str
) -> None:
    await sync(notes, memory, "foam", vault_files(VAULTS / "foam-docs" / "vault"))
    status = await link_service.vault_status(memory, "foam", visibility=None)
    assert (status.notes, status.links, status.resolved, status.dangling) == (86, 199, 197, 2)
    assert status.ambiguous == 0
    assert [(d.source_path, d.target, d.reason) for d in status.dangling_links] == [
        ("user/index.md", "publishing", "dangling"),  # a folder without index.md
        ("user/tools/cli/search.md", "cli-grep", "dangling"),  # the file is cli/grep.md
    ]


async def test_vault_status_counts_only_what_the_caller_may_read(
    notes: NoteService, link_service: LinkService, memory: str
) -> None:
    await sync(notes, memory, "v", SHAPES)
    everything = await link_service.vault_status(memory, "v", visibility=None)
    assert (everything.notes, everything.links, everything.resolved) == (10, 12, 10)
    assert (everything.dangling, everything.ambiguous) == (2, 1)
    assert [(d.target, d.reason, d.matches) for d in everything.dangling_links] == [
        ("Nothing Here", "dangling", 0),
        ("dup", "ambiguous", 2),
    ]
    only_b = NoteVisibility(
        memory_notes=False, projects=NameSet(frozenset({"b"})), skills=NameSet(frozenset())
    )
    seen = await link_service.vault_status(memory, "v", visibility=only_b)
    assert (seen.notes, seen.links, seen.resolved, seen.dangling, seen.dangling_links) == (
        1,
        0,
        0,
        0,
        [],
    )
    capped = await link_service.vault_status(memory, "v", visibility=None, first=1)
    assert len(capped.dangling_links) == 1
    unknown = await link_service.vault_status(memory, "nope", visibility=None)
    assert (unknown.notes, unknown.links, unknown.dangling_links) == (0, 0, [])


async def test_a_batch_of_a_large_vault_resolves_in_one_transaction(
    notes: NoteService, link_service: LinkService, memory: str
) -> None:
    # 500 notes of 20 links each: 80,000 candidate keys, more advisory locks than the
    # server's lock table holds if each key took one.
    files = [
        (
            f"projects/p{i % 5}/area{i % 7}/note{i}.md",
            " ".join(f"[[note{(i + j) % 500}]]" for j in range(1, 21)),
        )
        for i in range(500)
    ]
    await sync(notes, memory, "big", files)
    status = await link_service.vault_status(memory, "big", visibility=None)
    assert (status.notes, status.links, status.resolved) == (500, 10_000, 10_000)


async def test_a_link_too_long_to_index_dangles_instead_of_failing_the_write(
    notes: NoteService, db: Database, memory: str
) -> None:
    long_name = "€" * 900  # 2,700 bytes: no key of it fits an index entry
    await sync(notes, memory, "v", [("projects/a/s.md", f"[[{long_name}]] [[t]] [[.]]")])
    await sync(notes, memory, "v", [("projects/a/t.md", "t")])
    found = await stored_links(db, memory)
    assert {target[:3]: link.resolution for (_, target), link in found.items()} == {
        "€€€": "dangling",
        "t": "path",
        ".": "dangling",
    }


async def test_a_vault_note_synced_while_another_links_to_it_is_never_left_dangling(
    notes: NoteService, db: Database, memory: str
) -> None:
    # The source's candidate keys and the target's keys share their lock buckets: whichever
    # transaction commits second sees the other, whatever the interleaving.
    for round_ in range(8):
        source = (f"projects/a/src{round_}.md", f"[[../../shared/t{round_}]] [[t{round_}]]")
        target = (f"shared/t{round_}.md", "target")
        await asyncio.gather(sync(notes, memory, "v", [source]), sync(notes, memory, "v", [target]))
        found = await stored_links(db, memory)
        for written in (f"../../shared/t{round_}", f"t{round_}"):
            assert found[(source[0], written)].to == target[0], (round_, written)
