"""The vocabulary service: the memory's SKOS concepts and the concepts attached to notes.

Contract for the other graph features (tagging, linking, traversal) and GraphQL:

* :meth:`VocabularyService.tag_note` attaches concepts named by label paths, creating the
  missing ones as ``candidate`` in the memory's default scheme, in one transaction that
  never touches the note's row or version (concepts live beside the note).
* :meth:`label_index`, :meth:`note_concepts`, :meth:`concept_ids`, :meth:`labels`,
  :meth:`cooccurrence` read;
  :meth:`relate` adds symmetric ``related`` edges; :meth:`expand` turns concept and scheme
  ids into the concept sets the note filters take (descendants included).

Every write of a memory's vocabulary takes one advisory lock (see the repository), so two
taggers never create the same label twice and hierarchy limits hold under concurrency.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID, uuid4

from fortemi.graph.events import note_graph_event
from fortemi.graph.vocabulary.catalog.collections import CollectionCatalog
from fortemi.graph.vocabulary.catalog.service import VocabularyCatalog
from fortemi.graph.vocabulary.catalog.transfer import SkosTransfer
from fortemi.graph.vocabulary.hierarchy import LimitBroken, wiring_problem
from fortemi.graph.vocabulary.models import (
    DIMENSIONS,
    LITERARY_WARRANT,
    MAX_DEPTH,
    MAX_LABEL_CHARS,
    SOURCES,
    ConceptProposal,
    Cooccurrence,
    LabelEntry,
    NoteConcept,
)
from fortemi.graph.vocabulary.repository import VocabularyRepository
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.events import Event, EventBus
from fortemi.platform.notes.repository import NoteRepository
from fortemi.platform.notes.service import NoteIndexer

__all__ = ["MAX_PROPOSALS", "TagResult", "VocabularyService", "path_of"]

log = logging.getLogger(__name__)

# Concepts one tagging may attach: tagging proposes 8-15, a person a handful.
MAX_PROPOSALS = 100
# Sources whose proposals are derived (from a note's tags, by a job): a proposal breaking a
# hierarchy limit is skipped, since failing would reject the note's save or the whole job.
# A caller naming concepts itself (api, import) gets BAD_USER_INPUT instead.
_LENIENT = frozenset({"user", "ai_auto"})
# Sources that own their rows on a note: each run replaces the previous run's rows.
_REPLACING = frozenset({"user", "ai_auto"})


def path_of(tag: str) -> tuple[str, ...]:
    """The label path of a path tag ``a/b/c``: components trimmed, empty ones dropped."""
    return tuple(part.strip() for part in tag.split("/") if part.strip())


def _check_proposal(proposal: ConceptProposal) -> None:
    """A malformed proposal is the caller's error whatever its source."""
    if proposal.concept_id is not None:
        if not isinstance(proposal.concept_id, UUID):
            raise BadUserInput("concept must be a concept id", field="concept")
    elif not proposal.path:
        raise BadUserInput("A concept path needs at least one label", field="path")
    for label in () if proposal.concept_id is not None else proposal.path:
        if not isinstance(label, str) or not label.strip() or label != label.strip():
            raise BadUserInput(
                "Each label of a concept path must be non-empty text without surrounding "
                f"spaces; got {label!r}",
                field="path",
            )
        if len(label) > MAX_LABEL_CHARS or "\x00" in label:
            raise BadUserInput(
                f"A concept label has at most {MAX_LABEL_CHARS} characters and no NUL",
                field="path",
            )
    if proposal.dimension is not None and proposal.dimension not in DIMENSIONS:
        raise BadUserInput(
            f"dimension must be one of {', '.join(DIMENSIONS)}; got {proposal.dimension!r}",
            field="dimension",
        )
    for name in ("confidence", "relevance"):
        value = getattr(proposal, name)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (math.isfinite(value) and 0.0 <= value <= 1.0)
        ):
            raise BadUserInput(f"{name} must be a number from 0 to 1; got {value!r}", field=name)


@dataclass(slots=True)
class TagResult:
    """What one tagging changed: attached leaves, removed concepts, new and promoted ones."""

    attached: list[NoteConcept] = field(default_factory=list)
    removed: set[UUID] = field(default_factory=set)
    created: list[UUID] = field(default_factory=list)
    promoted: set[UUID] = field(default_factory=set)
    skipped: list[tuple[tuple[str, ...], str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.attached or self.removed or self.created or self.promoted)

    def payload(self, source: str) -> dict[str, object]:
        return {
            "source": source,
            "attached": [str(c.concept_id) for c in self.attached],
            "removed": sorted(str(c) for c in self.removed),
            "created": [str(c) for c in self.created],
            "promoted": sorted(str(c) for c in self.promoted),
        }


class VocabularyService:
    """A memory's SKOS vocabulary and its concepts on notes. Each method runs in one
    ``memory_transaction``; events (``note.concepts_changed``) go out after commit."""

    def __init__(
        self,
        db: Database,
        *,
        events: EventBus | None = None,
        followers: Sequence[NoteIndexer] = (),
    ) -> None:
        """``followers`` keep what derives from a note's concepts in step with them
        (the tag-enriched embedding, when configured): :meth:`tag_note` and
        :meth:`untag_note` call their ``enqueue`` in the transaction that changed a note's
        concepts, and ``committed`` after it commits, as the note service does with its
        indexers."""
        self._db = db
        self._events = events
        self._followers = tuple(followers)
        self._repo = VocabularyRepository()
        self._notes = NoteRepository()
        # Governance (schemes, concepts, labels, relations, collections), for admins.
        self.catalog = VocabularyCatalog(db, events=events)
        self.collections = CollectionCatalog(db, events=events)
        # SKOS Turtle import and export, for admins.
        self.skos = SkosTransfer(db, events=events)

    # -- the API the other graph features code against ------------------------------------

    async def label_index(self, memory: str) -> list[LabelEntry]:
        """Every label of every non-deprecated concept, with the concept's path (pref labels
        from the top along each concept's first broader link)."""
        async with self._db.memory_transaction(memory) as conn:
            rows = await self._repo.label_rows(conn)
            first = await self._repo.first_broader(conn)
            prefs = await self._repo.pref_labels(conn, list(first.values()))
        prefs.update({cid: pref for cid, _, _, _, pref in rows})
        return [
            LabelEntry(cid, label, kind, dimension, _path(cid, first, prefs))
            for cid, dimension, label, kind, _ in rows
        ]

    async def tag_note(
        self,
        memory: str,
        note_id: UUID,
        proposals: Sequence[ConceptProposal],
        *,
        source: str,
        actor: str | None,
    ) -> list[NoteConcept]:
        """Attach the leaf of each proposal's path to the note, in one transaction.

        Each path component reuses a concept whose pref, alt or hidden label matches it
        case-insensitively (a narrower concept of the previous component first); missing
        ones are created as ``candidate`` in the default scheme, wired broader→narrower.
        ``ai_auto`` (and ``user``, which mirrors ``note.tags``) replace that source's
        earlier rows on the note; a person's rows (user, api, import) are never changed by
        ``ai_auto``. At most one primary. Candidates reaching the literary warrant become
        controlled. Returns the attached leaves, in proposal order. NotFound for a missing
        or deleted note; BadUserInput for a malformed proposal, or (source api/import) one
        that breaks depth ≤ 5, ≤ 3 broader or acyclicity (code in ``extensions.reason``).
        """
        if source not in SOURCES:
            raise BadUserInput(f"source must be one of {', '.join(SOURCES)}", field="source")
        if len(proposals) > MAX_PROPOSALS:
            raise BadUserInput(
                f"Attach at most {MAX_PROPOSALS} concepts at once; got {len(proposals)}",
                field="concepts",
            )
        for proposal in proposals:
            _check_proposal(proposal)
        async with self._db.memory_transaction(memory, subject=f"Note {note_id}") as conn:
            live = await self._repo.note_live(conn, note_id)
            if not live:
                raise NotFound(
                    f"Note {note_id} does not exist in this memory"
                    + (" (it is deleted)" if live is False else ""),
                    note_id=str(note_id),
                )
            result = await self.tag_in(conn, note_id, proposals, source=source, actor=actor)
            note = await self._notes.get(conn, note_id) if result.changed else None
            pending = await self._follow(conn, memory, note_id) if result.changed else []
        await self._followed(pending)
        if note is not None:
            await self._publish(
                note_graph_event("concepts_changed", memory, note, actor, result.payload(source))
            )
        return result.attached

    async def untag_note(
        self, memory: str, note_id: UUID, concept_id: UUID, *, actor: str | None
    ) -> bool:
        """Detach ``concept_id`` from the note, whatever attached it; False when it was not
        attached. A ``user`` concept comes back with the next change of the note's tags
        if the tag is still there (the tag is the user's decision)."""
        async with self._db.memory_transaction(memory, subject=f"Note {note_id}") as conn:
            note = await self._notes.get(conn, note_id)
            if note is None:
                raise NotFound(
                    f"Note {note_id} does not exist in this memory", note_id=str(note_id)
                )
            removed = await self._repo.detach(conn, note_id, [concept_id])
            pending = await self._follow(conn, memory, note_id) if removed else []
        await self._followed(pending)
        if removed:
            payload = TagResult(removed=removed).payload("api")
            await self._publish(note_graph_event("concepts_changed", memory, note, actor, payload))
        return bool(removed)

    async def note_concepts(
        self, memory: str, note_ids: Sequence[UUID]
    ) -> dict[UUID, list[NoteConcept]]:
        """The concepts of each note (primary first, then by relevance); notes without
        any are absent."""
        if not note_ids:
            return {}
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.note_concepts(conn, note_ids)

    async def concept_ids(
        self, memory: str, note_ids: Sequence[UUID], *, conn: Connection | None = None
    ) -> dict[UUID, frozenset[UUID]]:
        """The concept ids of each of ``note_ids`` (empty set for a note without any).

        ``conn``: a transaction the caller holds in ``memory``, to read in (one round trip
        rather than a transaction of its own)."""
        if not note_ids:
            return {}
        if conn is None:
            async with self._db.memory_transaction(memory) as own:
                return await self.concept_ids(memory, note_ids, conn=own)
        found = await self._repo.note_concept_ids(conn, note_ids)
        return {note_id: frozenset(found.get(note_id, ())) for note_id in note_ids}

    async def relate(
        self, memory: str, pairs: Sequence[tuple[UUID, UUID, float]], *, created_by: str
    ) -> int:
        """``related`` edges for ``pairs`` (a, b, confidence), both directions, idempotent;
        how many pairs were new. Self pairs, and pairs where one concept is broader than
        the other (SKOS keeps related and broader apart, S27), are skipped; unknown
        concepts are NotFound."""
        cleaned: dict[tuple[UUID, UUID], float] = {}
        for a, b, confidence in pairs:
            if isinstance(confidence, bool) or not (
                isinstance(confidence, int | float)
                and math.isfinite(confidence)
                and 0.0 <= confidence <= 1.0
            ):
                raise BadUserInput("confidence must be a number from 0 to 1", field="confidence")
            if a != b:
                key = (a, b) if str(a) < str(b) else (b, a)
                cleaned[key] = max(float(confidence), cleaned.get(key, 0.0))
        if not cleaned:
            return 0
        ids = {cid for pair in cleaned for cid in pair}
        async with self._db.memory_transaction(memory) as conn:
            await self._repo.lock(conn)
            missing = ids - await self._repo.existing_concepts(conn, list(ids))
            if missing:
                raise NotFound(
                    f"No concept {', '.join(sorted(map(str, missing)))} in this memory",
                    concept_ids=sorted(map(str, missing)),
                )
            kept = [
                (a, b, c)
                for (a, b), c in cleaned.items()
                if not await self._repo.is_ancestor(conn, a, b)
                and not await self._repo.is_ancestor(conn, b, a)
            ]
            return await self._repo.relate(conn, kept, created_by) if kept else 0

    async def cooccurrence(self, memory: str, concept_ids: Sequence[UUID]) -> Cooccurrence:
        """How many live notes carry any concept, each of ``concept_ids``, and each pair of
        them together (for related-concept inference)."""
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.cooccurrence(conn, concept_ids)

    async def labels(
        self, memory: str, concept_ids: Sequence[UUID], *, conn: Connection | None = None
    ) -> dict[UUID, str]:
        """The preferred label of each existing concept of ``concept_ids``; ``conn`` as
        for :meth:`concept_ids`."""
        if not concept_ids:
            return {}
        if conn is None:
            async with self._db.memory_transaction(memory) as own:
                return await self._repo.pref_labels(own, concept_ids)
        return await self._repo.pref_labels(conn, concept_ids)

    async def expand(
        self,
        memory: str,
        concept_ids: Sequence[UUID] = (),
        scheme_ids: Sequence[UUID] = (),
    ) -> list[frozenset[UUID]]:
        """One set per id, concepts first then schemes, in order: a concept with all its
        narrower concepts (transitively), a scheme's concepts with theirs. For the note
        filters, which match a note carrying any concept of a set. An unknown id is
        BadUserInput naming it (a filter on a concept that does not exist is a mistake,
        not an empty result)."""
        if not concept_ids and not scheme_ids:
            return []
        async with self._db.memory_transaction(memory) as conn:
            known = await self._repo.existing_concepts(conn, concept_ids)
            known_schemes = await self._repo.existing_schemes(conn, scheme_ids)
            unknown = [c for c in concept_ids if c not in known]
            unknown += [s for s in scheme_ids if s not in known_schemes]
            if unknown:
                raise BadUserInput(
                    f"No concept or scheme {', '.join(map(str, unknown))} in this memory",
                    field="concepts",
                    ids=[str(u) for u in unknown],
                )
            sets = [frozenset(await self._repo.descendants(conn, [cid])) for cid in concept_ids]
            for scheme_id in scheme_ids:
                members = await self._repo.concepts_in_schemes(conn, [scheme_id])
                sets.append(frozenset(await self._repo.descendants(conn, list(members))))
        return sets

    # -- inside a caller's transaction (the note indexer) -----------------------------------

    async def tag_in(
        self,
        conn: Connection,
        note_id: UUID,
        proposals: Sequence[ConceptProposal],
        *,
        source: str,
        actor: str | None,
    ) -> TagResult:
        """:meth:`tag_note`'s work in ``conn``'s transaction, for a live note the caller
        checked; proposals already validated."""
        if proposals:
            # Only creating concepts needs the lock; a note without path tags (most saves
            # through the indexer) only drops stale rows and never waits on other taggers.
            await self._repo.lock(conn)
        result = TagResult()
        resolver = _Resolver(self._repo, conn, actor, result)
        leaves: dict[UUID, ConceptProposal] = {}
        named = [p.concept_id for p in proposals if p.concept_id is not None]
        if named:
            statuses = await self._repo.statuses(conn, named)
            missing = set(named) - set(statuses)
            if missing:
                raise NotFound(
                    f"No concept {', '.join(sorted(map(str, missing)))} in this memory",
                    concept_ids=sorted(map(str, missing)),
                )
            retired = sorted(str(c) for c in named if statuses[c] == "deprecated")
            if retired:
                raise Conflict(
                    f"Concept {', '.join(retired)} is deprecated; attach its replacement",
                    reason="deprecated_concept",
                    concept_ids=retired,
                )
        for proposal in proposals:
            if proposal.concept_id is not None:
                leaves.setdefault(proposal.concept_id, proposal)
                continue
            try:
                leaf = await resolver.resolve(proposal.path, proposal.dimension)
            except LimitBroken as exc:
                if source not in _LENIENT:
                    raise BadUserInput(exc.message, field="path", reason=exc.code) from exc
                log.info("concept path %r skipped: %s", proposal.path, exc.message)
                result.skipped.append((proposal.path, exc.code))
                continue
            leaves.setdefault(leaf, proposal)
        current = await self._repo.note_concept_rows(conn, note_id)
        for concept_id, proposal in leaves.items():
            held = current.get(concept_id)
            if source == "ai_auto" and held is not None and held[0] != "ai_auto":
                continue  # a person's decision stands
            await self._repo.attach(
                conn,
                note_id,
                concept_id,
                source=source,
                confidence=float(proposal.confidence),
                relevance=float(proposal.relevance),
                actor=actor,
            )
        if source in _REPLACING:
            stale = [
                cid for cid, (src, _) in current.items() if src == source and cid not in leaves
            ]
            result.removed = await self._repo.detach(conn, note_id, stale) if stale else set()
        primary = next((cid for cid, p in leaves.items() if p.primary), None)
        if primary is not None:
            human_primary = any(
                p and s != "ai_auto" and c not in result.removed for c, (s, p) in current.items()
            )
            if not (source == "ai_auto" and human_primary):
                await self._repo.set_primary(conn, note_id, primary)
        if not leaves:
            return result  # a note without path tags: one read, and nothing more
        result.promoted = await self._repo.apply_warrant(conn, list(leaves), LITERARY_WARRANT)
        stored = {
            c.concept_id: c
            for c in (await self._repo.note_concepts(conn, [note_id])).get(note_id, [])
        }
        result.attached = [stored[cid] for cid in leaves if cid in stored]
        return result

    async def _follow(
        self, conn: Connection, memory: str, note_id: UUID
    ) -> list[tuple[NoteIndexer, Sequence[object]]]:
        return [(f, await f.enqueue(conn, memory, [note_id])) for f in self._followers]

    async def _followed(self, pending: list[tuple[NoteIndexer, Sequence[object]]]) -> None:
        for follower, work in pending:
            await follower.committed(work)

    async def _publish(self, event: Event) -> None:
        if self._events is not None:
            await self._events.publish(event)


class _Resolver:
    """Turns label paths into concept ids within one locked transaction, creating and
    wiring concepts as needed; remembers what it resolved so repeated prefixes cost one
    lookup."""

    def __init__(
        self, repo: VocabularyRepository, conn: Connection, actor: str | None, result: TagResult
    ) -> None:
        self._repo = repo
        self._conn = conn
        self._actor = actor
        self._result = result
        self._scheme: UUID | None = None
        self._known: dict[tuple[str, ...], UUID] = {}

    async def resolve(self, path: tuple[str, ...], dimension: str | None) -> UUID:
        if len(path) > MAX_DEPTH:
            raise LimitBroken(
                f"A concept path has at most {MAX_DEPTH} levels; {'/'.join(path)} has {len(path)}",
                "max_depth",
            )
        parent: UUID | None = None
        for i, label in enumerate(path):
            keys = tuple(part.lower() for part in path[: i + 1])
            known = self._known.get(keys)
            if known is None:
                known = await self._component(parent, label, dimension)
                self._known[keys] = known
            parent = known
        if parent is None:
            raise ValueError("an empty concept path reached the resolver")
        if dimension is not None:
            await self._repo.fill_dimension(self._conn, parent, dimension)
        return parent

    async def _component(self, parent: UUID | None, label: str, dimension: str | None) -> UUID:
        key = label.lower()
        if parent is not None:
            child = await self._repo.narrower_by_key(self._conn, parent, key)
            if child is not None:
                return child
        matches = (await self._repo.concepts_by_key(self._conn, [key])).get(key, [])
        if parent is None:
            if matches:
                return matches[0]
            return await self._create(label, dimension, None)
        problem: LimitBroken | None = None
        for match in matches:
            problem = await self._wiring_problem(match, parent)
            if problem is None:
                await self._repo.add_broader(self._conn, match, parent, self._actor)
                return match
        if problem is not None:
            raise problem
        level = await self._repo.level(self._conn, parent)
        if level + 1 > MAX_DEPTH:
            raise LimitBroken(
                f"{label!r} would sit at level {level + 1}; concepts nest at most "
                f"{MAX_DEPTH} levels deep",
                "max_depth",
            )
        return await self._create(label, dimension, parent)

    async def _wiring_problem(self, concept: UUID, parent: UUID) -> LimitBroken | None:
        return await wiring_problem(self._repo, self._conn, concept, parent)

    async def _create(self, label: str, dimension: str | None, parent: UUID | None) -> UUID:
        if self._scheme is None:
            self._scheme = await self._repo.default_scheme(self._conn, uuid4(), self._actor)
        concept = await self._repo.insert_concept(
            self._conn,
            concept_id=uuid4(),
            scheme_id=self._scheme,
            label=label,
            dimension=dimension,
            actor=self._actor,
        )
        if parent is not None:
            await self._repo.add_broader(self._conn, concept.id, parent, self._actor)
        self._result.created.append(concept.id)
        return concept.id


def _path(concept_id: UUID, first: dict[UUID, UUID], prefs: dict[UUID, str]) -> tuple[str, ...]:
    """Pref labels from the top down to ``concept_id`` along first broader links."""
    chain: list[str] = []
    seen: set[UUID] = set()
    current: UUID | None = concept_id
    while current is not None and current not in seen and len(chain) <= 32:
        seen.add(current)
        chain.append(prefs.get(current, str(current)))
        current = first.get(current)
    return tuple(reversed(chain))
