"""The tools: each is one GraphQL operation, named after the tool, run as the caller.

A tool's arguments are its operation's variables (plus ``memory``, which picks the memory
as ``X-Fortemi-Memory`` does); its result is the operation's data. Running the operation
through the schema is what makes a tool call the same as the GraphQL request: the same
resolvers, access checks, audit records, validation, cost limits and error codes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["TOOLS", "ToolSpec"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    document: str  # one operation, named after the tool
    required_result: str | None = None  # a root field whose null means NOT_FOUND
    read_only: bool = True
    descriptions: dict[str, str] = field(default_factory=dict)
    # Arguments the tool takes beside the operation's variables (JSON Schema by name).
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)


_NOTE = """id title content format project skill collection tags metadata version
    path externalSource externalId starred archived deleted createdAt updatedAt"""
_BRIEF = "id title project path tags updatedAt"
_JOB = """id type memory tier status attempts maxAttempts progress progressMessage
    failureClass failureCode result createdAt startedAt finishedAt"""
_PLAN = """abstained reason tokensUsed tokenBudget strategy scope degraded degradedReason
    prompt chunks { note { id title path project } heading text score relevance tokens }"""
_LINK = f"kind score rank note {{ {_BRIEF} }}"
_NOTE_ID = {"id": "The note's id, as search_notes, capture_note and the other tools return it"}

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "list_memories",
        "List the memories (separate knowledge bases) you may use, with their note counts "
        "and which one is the default. Call this first when unsure which `memory` to pass "
        "to the other tools; without `memory` they use the default one.",
        "query list_memories { memories { name isDefault noteCount createdAt } }",
    ),
    ToolSpec(
        "capture_note",
        "Save a new note (markdown by default) in a memory: something learned, decided or "
        "worth keeping. Returns the note with its id. Use update_note to change an existing "
        "note, and upsert_external_notes to mirror documents that have their own ids.",
        "mutation capture_note($input: CreateNoteInput!) { "
        f"createNote(input: $input) {{ {_NOTE} }} }}",
        read_only=False,
        descriptions={"input": "The note: title, content, tags, project, metadata..."},
    ),
    ToolSpec(
        "update_note",
        "Change an existing note by id (only the fields given). Each change makes a new "
        "version; pass expectedVersion to refuse the change (CONFLICT) if someone else "
        "changed the note since you read it.",
        f"mutation update_note($id: ID!, $input: UpdateNoteInput!) {{ "
        f"updateNote(id: $id, input: $input) {{ {_NOTE} }} }}",
        read_only=False,
        descriptions=_NOTE_ID,
    ),
    ToolSpec(
        "get_note",
        "Read one note by id: its full content, metadata and tags, and every earlier "
        "version (oldest first). Use after search_notes to read a hit in full.",
        f"query get_note($id: ID!) {{ note(id: $id) {{ {_NOTE} }} "
        "noteVersions(id: $id) { version title contentHash createdAt createdBy } }",
        required_result="note",
        descriptions=_NOTE_ID,
    ),
    ToolSpec(
        "search_notes",
        "Find notes by words and meaning (HYBRID, default), exact words (LEXICAL) or meaning "
        "only (SEMANTIC). Filter by tags, projects, dates; explain=true shows how each hit "
        "was scored. Returns the best matching chunk of each note. Use ask_memory for a "
        "direct answer to a question instead of a list of notes.",
        f"query search_notes($query: String!, $mode: SearchMode! = HYBRID, "
        f"$limit: Int! = 10, $filter: SearchFilter, $explain: Boolean! = false, "
        f"$memories: [String!]) {{ search(query: $query, mode: $mode, limit: $limit, "
        f"filter: $filter, explain: $explain, memories: $memories) {{ "
        f"hits {{ memory score chunk note {{ {_BRIEF} }} "
        "explain { lexicalRank semanticRank fusedScore } } "
        "degraded degradedReason tookMs } }",
        descriptions={"limit": "How many notes to return, 1..100"},
    ),
    ToolSpec(
        "retrieve_context",
        "Select the passages of your notes that answer a question, within a token budget, "
        "laid out to paste into a prompt; no model is called. Use it to ground your own "
        "answer; use ask_memory to have the server answer.",
        "query retrieve_context($input: RetrieveInput!) { "
        f"retrieve(input: $input) {{ {_PLAN} }} }}",
    ),
    ToolSpec(
        "ask_memory",
        "Answer a question from your notes, with numbered citations of the notes used. "
        "Abstains (answer null, with a reason) when nothing relevant is found.",
        "query ask_memory($input: AskInput!) { ask(input: $input) { answer reason "
        "degraded degradedReason model citations { number path heading note { id title } } "
        "plan { abstained reason tokensUsed } } }",
    ),
    ToolSpec(
        "upsert_external_notes",
        "Mirror documents from another system (source plus each item's externalId): creates "
        "notes not seen before, updates changed ones, leaves identical ones alone. Safe to "
        "repeat with the same items.",
        "mutation upsert_external_notes($input: UpsertExternalNotesInput!) { "
        "upsertExternalNotes(input: $input) { created updated unchanged conflicts "
        f"results {{ externalId outcome note {{ {_BRIEF} }} }} }} }}",
        read_only=False,
    ),
    ToolSpec(
        "note_links",
        "A note's links: the notes it links to (outgoing), the notes linking to it "
        "(backlinks, incoming) and its wiki links that lead nowhere (dangling).",
        f"query note_links($id: ID!, $first: Int) {{ noteLinks(id: $id, first: $first) {{ "
        f"outgoing {{ {_LINK} }} incoming {{ {_LINK} }} dangling {{ target heading label }} }} }}",
        descriptions=_NOTE_ID,
    ),
    ToolSpec(
        "explore_graph",
        "Walk the knowledge graph around a note: the notes within `depth` hops, the links "
        "between them and their communities (topic clusters). Use to discover related "
        "material that search would not find by words.",
        "query explore_graph($noteId: ID!, $depth: Int! = 2, $maxNodes: Int! = 50, "
        "$minScore: Float! = 0) { graph(noteId: $noteId, depth: $depth, maxNodes: $maxNodes, "
        "minScore: $minScore) { nodes { id title depth community communityLabel } "
        "edges { source target edgeType score } "
        "meta { totalNodes totalEdges truncatedNodes clamped } } }",
        descriptions={"noteId": "The note to start from"},
    ),
    ToolSpec(
        "note_concepts",
        "The concepts (controlled-vocabulary tags) attached to a note, primary first, with "
        "their confidence. Use search_concepts to find concepts by label.",
        "query note_concepts($id: ID!) { note(id: $id) { id title "
        "concepts { conceptId label dimension source confidence relevance primary } } }",
        required_result="note",
        descriptions=_NOTE_ID,
    ),
    ToolSpec(
        "search_concepts",
        "Find vocabulary concepts whose label starts with `label`, with how many notes carry "
        "each; filter search_notes by them with filter.concepts.",
        "query search_concepts($label: String, $first: Int = 20) { "
        "concepts(label: $label, first: $first) { edges { node { id prefLabel status "
        "definition noteCount broader { id prefLabel } } } } }",
    ),
    ToolSpec(
        "reprocess_notes",
        "Run notes through the pipeline again (TAGGING, EMBEDDING, LINKING): after a model "
        "or vocabulary change, or when a note looks mis-tagged. Returns the jobs; follow "
        "them with job_status.",
        f"mutation reprocess_notes($ids: [ID!]!, $steps: [ReprocessStep!]!) {{ "
        f"bulkReprocessNotes(ids: $ids, steps: $steps) {{ {_JOB} }} }}",
        read_only=False,
        descriptions={"ids": "The notes' ids", "steps": "Which steps to run again"},
    ),
    ToolSpec(
        "job_status",
        "A background job by id: its status (PENDING, RUNNING, COMPLETED, FAILED, "
        "CANCELLED), progress 0..100, and its result or failure. With waitSeconds, waits "
        "(sending progress notifications if you asked for them) until the job ends or the "
        "time is up, then answers.",
        f"query job_status($id: ID!) {{ job(id: $id) {{ {_JOB} }} }}",
        required_result="job",
        descriptions={"id": "The job's id, as reprocess_notes returns it"},
        extra={
            "waitSeconds": {
                "type": "integer",
                "minimum": 0,
                "maximum": 120,
                "default": 0,
                "description": "Wait up to this long for the job to end (default: answer now)",
            }
        },
    ),
)
