"""SKOS in Turtle, both ways, with rdflib: a vocabulary snapshot from Turtle (import) and
Turtle from a snapshot (export).

What round-trips (everything the model holds): concept schemes (title, description), concepts
(URI, notation, pref/alt/hidden labels with their language, definitions and scope notes,
language-neutral and per language, ``inScheme``, ``topConceptOf``/``hasTopConcept``),
``broader``/``narrower`` (both written; read from either), ``related``, collections
(``skos:Collection`` with ``skos:member``, ``skos:OrderedCollection`` with
``skos:memberList``), deprecation (``owl:deprecated``). Two facts SKOS has no term for use
our own namespace (``urn:fortemi:vocabulary:``): a concept's dimension. Everything else in
the file (``closeMatch``, ``skos:note``, provenance) is read past, not stored.

Status: an imported concept is a ``candidate`` (or ``deprecated`` when the file says so):
``controlled`` is earned in a memory by its notes (literary warrant), not declared by a file.

Parsing is pure and checks the model's invariants before anything is written: one pref label
per language (SKOS S14), pref/alt/hidden disjoint (S13), labels of 1-200 characters, at most
3 broader concepts, no cycle, at most 5 levels, related apart from broader (S27). A file that
breaks one is BAD_USER_INPUT naming the concept; bad Turtle is BAD_USER_INPUT with the
parser's line.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from uuid import UUID, uuid4

from rdflib import RDF, RDFS, BNode, Graph, Literal, Namespace, URIRef
from rdflib.collection import Collection as RdfList
from rdflib.exceptions import ParserError
from rdflib.namespace import DC, DCTERMS, OWL, SKOS
from rdflib.plugins.parsers.notation3 import BadSyntax
from rdflib.term import Node

from fortemi.graph.vocabulary.models import (
    DIMENSIONS,
    MAX_BROADER,
    MAX_DEPTH,
    MAX_LABEL_CHARS,
    Collection,
    Concept,
    ConceptLabel,
    ConceptNote,
    ConceptRelation,
    ConceptScheme,
)
from fortemi.platform.errors import BadUserInput

__all__ = ["FMI", "MAX_TURTLE_BYTES", "VocabularySnapshot", "from_turtle", "to_turtle"]

FMI = Namespace("urn:fortemi:vocabulary:")
MAX_TURTLE_BYTES = 20 * 1024 * 1024
_MAX_TEXT = 20_000
_BASE = "urn:fortemi:import:"


@dataclass(slots=True)
class VocabularySnapshot:
    """A vocabulary as the model holds it: what export reads and import writes."""

    schemes: list[ConceptScheme] = field(default_factory=list)
    concepts: list[Concept] = field(default_factory=list)
    labels: list[ConceptLabel] = field(default_factory=list)
    notes: list[ConceptNote] = field(default_factory=list)
    relations: list[ConceptRelation] = field(default_factory=list)
    collections: list[Collection] = field(default_factory=list)


def _bad(message: str, **extensions: object) -> BadUserInput:
    return BadUserInput(message, field="turtle", **extensions)


def _parse(text: str) -> Graph:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_TURTLE_BYTES:
        raise _bad(f"The Turtle document is over {MAX_TURTLE_BYTES // (1024 * 1024)} MB")
    graph = Graph()
    try:
        graph.parse(data=text, format="turtle", publicID=_BASE)
    except BadSyntax as exc:
        line, why = exc.args[1] + 1, exc.args[4]
        raise _bad(f"The Turtle does not parse at line {line}: {why}", line=line) from exc
    except (ParserError, ValueError) as exc:
        raise _bad(f"The Turtle does not parse: {exc}") from exc
    return graph


def _name(node: Node) -> str:
    return str(node) if isinstance(node, URIRef) else f"_:{node}"


def _uri(node: Node) -> str | None:
    return str(node) if isinstance(node, URIRef) else None


def _lang(literal: Literal) -> str:
    return (literal.language or "").lower()


def _pick(graph: Graph, subject: Node, *predicates: URIRef) -> str | None:
    """The first value of the first predicate that has one: untagged, then English, then
    the first language in order."""
    for predicate in predicates:
        values = sorted(
            (v for v in graph.objects(subject, predicate) if isinstance(v, Literal)),
            key=lambda v: (_lang(v) != "", _lang(v) != "en", _lang(v), str(v)),
        )
        if values:
            return str(values[0])
    return None


def _text(value: str | None, what: str, subject: Node) -> str | None:
    if value is None:
        return None
    if len(value) > _MAX_TEXT or "\x00" in value:
        raise _bad(f"{what} of {_name(subject)} is over {_MAX_TEXT} characters")
    return value if value.strip() else None


class _Reader:
    """One import: the graph's schemes, concepts and collections with fresh ids."""

    def __init__(self, graph: Graph, fallback_title: str, actor: str | None) -> None:
        self.graph = graph
        self.actor = actor
        self.now = datetime.now(UTC)
        self.out = VocabularySnapshot()
        self.fallback_title = fallback_title
        self.scheme_ids: dict[Node, UUID] = {}
        self.concept_ids: dict[Node, UUID] = {}
        self.fallback: UUID | None = None

    def read(self) -> VocabularySnapshot:
        g = self.graph
        schemes = set(g.subjects(RDF.type, SKOS.ConceptScheme))
        schemes |= set(g.objects(None, SKOS.inScheme)) & set(g.subjects())
        schemes |= set(g.objects(None, SKOS.topConceptOf))
        collections = set(g.subjects(RDF.type, SKOS.Collection))
        collections |= set(g.subjects(RDF.type, SKOS.OrderedCollection))
        concepts = set(g.subjects(RDF.type, SKOS.Concept))
        concepts |= set(g.subjects(SKOS.prefLabel)) - schemes - collections
        for node in sorted(schemes, key=_name):
            self._scheme(node)
        for node in sorted(concepts, key=_name):
            self.concept_ids[node] = uuid4()
        for node in sorted(concepts, key=_name):
            self._concept(node)
        self._relations(concepts)
        for node in sorted(collections, key=_name):
            self._collection(node)
        return self.out

    def _scheme(self, node: Node) -> None:
        g = self.graph
        title = _pick(g, node, DCTERMS.title, DC.title, RDFS.label, SKOS.prefLabel)
        scheme = ConceptScheme(
            id=uuid4(),
            uri=_uri(node),
            title=(title or _name(node))[:500].strip() or _name(node)[:500],
            description=_text(
                _pick(g, node, DCTERMS.description, DC.description), "description", node
            ),
            is_default=False,
            created_at=self.now,
            created_by=self.actor,
        )
        self.scheme_ids[node] = scheme.id
        self.out.schemes.append(scheme)

    def _fallback_scheme(self) -> UUID:
        if len(self.scheme_ids) == 1:
            return next(iter(self.scheme_ids.values()))
        if self.fallback is None:
            scheme = ConceptScheme(
                uuid4(), None, self.fallback_title, None, False, self.now, self.actor
            )
            self.out.schemes.append(scheme)
            self.fallback = scheme.id
        return self.fallback

    def _scheme_of(self, node: Node) -> UUID:
        g = self.graph
        owners = set(g.objects(node, SKOS.inScheme)) | set(g.objects(node, SKOS.topConceptOf))
        owners |= set(g.subjects(SKOS.hasTopConcept, node))
        known = sorted((o for o in owners if o in self.scheme_ids), key=_name)
        return self.scheme_ids[known[0]] if known else self._fallback_scheme()

    def _concept(self, node: Node) -> None:
        g = self.graph
        cid = self.concept_ids[node]
        labels: dict[tuple[str, str], str] = {}  # (lang, folded) -> kind
        prefs: set[str] = set()
        for kind, predicate in (
            ("pref", SKOS.prefLabel),
            ("alt", SKOS.altLabel),
            ("hidden", SKOS.hiddenLabel),
        ):
            for value in sorted(
                (v for v in g.objects(node, predicate) if isinstance(v, Literal)), key=str
            ):
                label, lang = str(value), _lang(value)
                if not 1 <= len(label) <= MAX_LABEL_CHARS or "\x00" in label or not label.strip():
                    raise _bad(
                        f"A label of {_name(node)} is empty or over {MAX_LABEL_CHARS} characters"
                    )
                if kind == "pref":
                    if lang in prefs:
                        raise _bad(
                            f"{_name(node)} has two preferred labels in "
                            f"{lang or 'no language'!r} (SKOS S14)"
                        )
                    prefs.add(lang)
                key = (lang, label.lower())
                if key in labels:
                    if labels[key] != kind:
                        raise _bad(
                            f"{label!r} is both a {labels[key]} and a {kind} label of "
                            f"{_name(node)} (SKOS S13)"
                        )
                    continue
                labels[key] = kind
                self.out.labels.append(ConceptLabel(cid, kind, lang, label))
        if not prefs:
            raise _bad(f"{_name(node)} has no skos:prefLabel")
        neutral: dict[str, str | None] = {}
        for kind, predicate in (("definition", SKOS.definition), ("scope_note", SKOS.scopeNote)):
            seen: set[str] = set()
            values = sorted(
                (v for v in g.objects(node, predicate) if isinstance(v, Literal)), key=str
            )
            neutral[kind] = None
            for value in values:
                lang, text = _lang(value), _text(str(value), kind.replace("_", " "), node)
                if text is None or lang in seen:
                    continue  # the model holds one text per language
                seen.add(lang)
                if lang:
                    self.out.notes.append(ConceptNote(cid, kind, lang, text))
                else:
                    neutral[kind] = text
        dimension = _pick(g, node, FMI.dimension)
        deprecated = any(
            bool(v.toPython()) for v in g.objects(node, OWL.deprecated) if isinstance(v, Literal)
        )
        notation = _pick(g, node, SKOS.notation)
        self.out.concepts.append(
            Concept(
                id=cid,
                scheme_id=self._scheme_of(node),
                uri=_uri(node),
                notation=_text(notation, "notation", node),
                status="deprecated" if deprecated else "candidate",
                dimension=dimension if dimension in DIMENSIONS else None,
                definition=neutral["definition"],
                scope_note=neutral["scope_note"],
                created_at=self.now,
                updated_at=self.now,
                created_by=self.actor,
            )
        )

    def _target(self, source: Node, target: Node, predicate: str) -> UUID:
        if target not in self.concept_ids:
            raise _bad(
                f"{_name(source)} has {predicate} {_name(target)}, which this file does not "
                "define as a concept"
            )
        return self.concept_ids[target]

    def _relations(self, concepts: Iterable[Node]) -> None:
        g = self.graph
        broader: set[tuple[UUID, UUID]] = set()
        related: set[tuple[UUID, UUID]] = set()
        for node in concepts:
            cid = self.concept_ids[node]
            for target in g.objects(node, SKOS.broader):
                broader.add((cid, self._target(node, target, "skos:broader")))
            for target in g.objects(node, SKOS.narrower):
                broader.add((self._target(node, target, "skos:narrower"), cid))
            for target in g.objects(node, SKOS.related):
                other = self._target(node, target, "skos:related")
                related.update({(cid, other), (other, cid)})
        _check_hierarchy(broader, related, {cid: node for node, cid in self.concept_ids.items()})
        self.out.relations += [
            ConceptRelation(a, b, "broader", None, self.actor, self.now) for a, b in sorted(broader)
        ]
        self.out.relations += [
            ConceptRelation(a, b, "related", None, self.actor, self.now) for a, b in sorted(related)
        ]

    def _collection(self, node: Node) -> None:
        g = self.graph
        ordered = (node, RDF.type, SKOS.OrderedCollection) in g
        lists = list(g.objects(node, SKOS.memberList))
        members: list[Node] = list(RdfList(g, lists[0])) if ordered and lists else []
        if not members:
            members = sorted(g.objects(node, SKOS.member), key=_name)
        ids = [self.concept_ids[m] for m in members if m in self.concept_ids]
        ids = list(dict.fromkeys(ids))
        label = _pick(g, node, SKOS.prefLabel, RDFS.label, DCTERMS.title) or _name(node)
        schemes = sorted(
            (s for s in g.objects(node, SKOS.inScheme) if s in self.scheme_ids), key=_name
        )
        if schemes:
            scheme_id = self.scheme_ids[schemes[0]]
        else:
            by_id = {c.id: c.scheme_id for c in self.out.concepts}
            scheme_id = by_id[ids[0]] if ids else self._fallback_scheme()
        self.out.collections.append(
            Collection(
                uuid4(),
                scheme_id,
                _uri(node),
                label[:MAX_LABEL_CHARS],
                ordered,
                self.now,
                tuple(ids),
            )
        )


def _check_hierarchy(
    broader: set[tuple[UUID, UUID]], related: set[tuple[UUID, UUID]], nodes: dict[UUID, Node]
) -> None:
    parents: dict[UUID, list[UUID]] = defaultdict(list)
    for child, parent in broader:
        if child == parent:
            raise _bad(f"{_name(nodes[child])} is broader than itself")
        parents[child].append(parent)
    for child, found in parents.items():
        if len(found) > MAX_BROADER:
            raise _bad(
                f"{_name(nodes[child])} has {len(found)} broader concepts; at most {MAX_BROADER}",
                reason="max_broader",
            )
    levels: dict[UUID, int] = {}

    def level(concept: UUID, path: tuple[UUID, ...]) -> int:
        if concept in path:
            raise _bad(f"The broader links of {_name(nodes[concept])} form a cycle", reason="cycle")
        if concept not in levels:
            levels[concept] = 1 + max(
                (level(p, (*path, concept)) for p in parents.get(concept, ())), default=0
            )
        return levels[concept]

    for concept in list(parents):
        if level(concept, ()) > MAX_DEPTH:
            raise _bad(
                f"{_name(nodes[concept])} sits {levels[concept]} levels deep; at most {MAX_DEPTH}",
                reason="max_depth",
            )

    def ancestors(concept: UUID) -> set[UUID]:
        found: set[UUID] = set()
        todo = list(parents.get(concept, ()))
        while todo:
            current = todo.pop()
            if current not in found:
                found.add(current)
                todo.extend(parents.get(current, ()))
        return found

    for a, b in related:
        if b in ancestors(a):
            raise _bad(
                f"{_name(nodes[a])} is both related to and narrower than {_name(nodes[b])} "
                "(SKOS S27)"
            )


def from_turtle(
    text: str, *, fallback_title: str = "Imported vocabulary", actor: str | None = None
) -> VocabularySnapshot:
    """The vocabulary ``text`` describes, with fresh ids; nothing is written."""
    return _Reader(_parse(text), fallback_title, actor).read()


def to_turtle(snapshot: VocabularySnapshot) -> str:
    """``snapshot`` as SKOS Turtle. Things without a URI get ``urn:uuid:<id>``."""
    g = Graph()
    for prefix, namespace in (("skos", SKOS), ("dct", DCTERMS), ("owl", OWL), ("fmi", FMI)):
        g.bind(prefix, namespace)
    scheme_node = {s.id: URIRef(s.uri or f"urn:uuid:{s.id}") for s in snapshot.schemes}
    concept_node = {c.id: URIRef(c.uri or f"urn:uuid:{c.id}") for c in snapshot.concepts}
    has_broader = {r.source_id for r in snapshot.relations if r.kind == "broader"}
    for scheme in snapshot.schemes:
        node = scheme_node[scheme.id]
        g.add((node, RDF.type, SKOS.ConceptScheme))
        g.add((node, DCTERMS.title, Literal(scheme.title)))
        if scheme.description:
            g.add((node, DCTERMS.description, Literal(scheme.description)))
    for concept in snapshot.concepts:
        node = concept_node[concept.id]
        in_scheme = scheme_node[concept.scheme_id]
        g.add((node, RDF.type, SKOS.Concept))
        g.add((node, SKOS.inScheme, in_scheme))
        if concept.id not in has_broader:
            g.add((node, SKOS.topConceptOf, in_scheme))
            g.add((in_scheme, SKOS.hasTopConcept, node))
        for predicate, value in (
            (SKOS.definition, concept.definition),
            (SKOS.scopeNote, concept.scope_note),
            (SKOS.notation, concept.notation),
        ):
            if value is not None:
                g.add((node, predicate, Literal(value)))
        if concept.status == "deprecated":
            g.add((node, OWL.deprecated, Literal(True)))
        if concept.dimension is not None:
            g.add((node, FMI.dimension, Literal(concept.dimension)))
    predicates = {"pref": SKOS.prefLabel, "alt": SKOS.altLabel, "hidden": SKOS.hiddenLabel}
    for label in snapshot.labels:
        g.add(
            (
                concept_node[label.concept_id],
                predicates[label.kind],
                Literal(label.label, lang=label.lang or None),
            )
        )
    notes = {"definition": SKOS.definition, "scope_note": SKOS.scopeNote}
    for note in snapshot.notes:
        g.add((concept_node[note.concept_id], notes[note.kind], Literal(note.text, lang=note.lang)))
    for relation in snapshot.relations:
        if relation.source_id not in concept_node or relation.target_id not in concept_node:
            continue
        source, target = concept_node[relation.source_id], concept_node[relation.target_id]
        if relation.kind == "broader":
            g.add((source, SKOS.broader, target))
            g.add((target, SKOS.narrower, source))
        else:
            g.add((source, SKOS.related, target))
    for collection in snapshot.collections:
        node = URIRef(collection.uri or f"urn:uuid:{collection.id}")
        members = [concept_node[m] for m in collection.members if m in concept_node]
        g.add((node, RDF.type, SKOS.OrderedCollection if collection.ordered else SKOS.Collection))
        g.add((node, SKOS.prefLabel, Literal(collection.label)))
        if collection.scheme_id in scheme_node:
            g.add((node, SKOS.inScheme, scheme_node[collection.scheme_id]))
        for member in members:
            g.add((node, SKOS.member, member))
        if collection.ordered:
            head = BNode()
            RdfList(g, head, list(members))
            g.add((node, SKOS.memberList, head))
    return g.serialize(format="turtle")
