-- Links between notes: explicit (API), wiki (``[[...]]`` in content) and semantic (the
-- Linking job), one table so traversal walks one index; the raw wiki references,
-- resolved or dangling; and the keys by which a wiki reference finds a note.
-- Runs with search_path set to the memory's schema (then public).

CREATE TABLE note_link (
    source_id     uuid NOT NULL REFERENCES note (id) ON DELETE CASCADE,
    target_id     uuid NOT NULL REFERENCES note (id) ON DELETE CASCADE,
    kind          text NOT NULL CHECK (kind IN ('explicit', 'wiki', 'semantic')),
    score         real NOT NULL CHECK (score BETWEEN 0 AND 1),
    rank          integer CHECK (rank >= 1),
    -- semantic links: how they were made (strategy, k, weight, fallback, ...)
    metadata      jsonb NOT NULL DEFAULT '{}'::jsonb,
    set_id        integer REFERENCES embedding_set (id) ON DELETE CASCADE,
    model         text,
    -- graph maintenance: shared-nearest-neighbour score, and PFNET's soft prune
    snn           real CHECK (snn BETWEEN 0 AND 1),
    pruned        boolean NOT NULL DEFAULT false,
    -- when the link was made (explicit, wiki) or last computed (semantic)
    computed_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    created_by    text,
    PRIMARY KEY (source_id, kind, target_id),
    CHECK (source_id <> target_id)
)
-- Half of each page is left free so graph maintenance's rewrite of the semantic links
-- (an SNN score on nearly every row, the first run; PFNET flags) stays HOT: no new entry
-- in any of the five indexes. Rewriting 114k rows at 10k notes took 3.3 s instead of
-- 10.2 s (alternating runs), 295k WAL records instead of 690k. The dead versions of a
-- non-HOT rewrite would take that space anyway until vacuum, and bloat every index too.
WITH (fillfactor = 50);
CREATE INDEX note_link_target_idx ON note_link (target_id, kind);
-- Traversal walks only traversable links (explicit and wiki, semantic unless PFNET pruned
-- them), both ways. These two partial covering indexes hold everything the walk and the
-- edges statement read, so both are index-only scans: at 10k notes / 100k links the walk
-- went from 10.7 to 6.8 ms and the edges from 10.0 to 5.6 ms (medians of 60 starts,
-- depth 3, maxNodes 200), the heap reads being most of their time. They leave ``snn``
-- and ``metadata`` out, so maintenance's SNN scores stay HOT updates; a change of
-- ``pruned`` moves a row in or out of them, as it must.
CREATE INDEX note_link_walk_source_idx ON note_link (source_id)
    INCLUDE (target_id, kind, score, rank, set_id, model, computed_at)
    WHERE kind <> 'semantic' OR NOT pruned;
CREATE INDEX note_link_walk_target_idx ON note_link (target_id)
    INCLUDE (source_id, kind, score)
    WHERE kind <> 'semantic' OR NOT pruned;
-- Read-time normalisation takes min and max of the semantic scores: two index probes.
CREATE INDEX note_link_kind_score_idx ON note_link (kind, score);

-- Every ``[[target]]`` / ``![[embed]]`` a note's current version contains, in order.
-- ``target_id`` is NULL while the target is dangling.
CREATE TABLE wiki_link (
    source_id   uuid NOT NULL REFERENCES note (id) ON DELETE CASCADE,
    ordinal     integer NOT NULL CHECK (ordinal >= 0),
    target      text NOT NULL,
    target_key  text NOT NULL,
    heading     text,
    label       text,
    embed       boolean NOT NULL DEFAULT false,
    target_id   uuid REFERENCES note (id) ON DELETE SET NULL,
    PRIMARY KEY (source_id, ordinal)
);
-- Every reference whose key a new or changed note gains or loses is resolved again.
CREATE INDEX wiki_link_target_key_idx ON wiki_link (target_key);
CREATE INDEX wiki_link_target_idx ON wiki_link (target_id);

-- The keys a wiki reference can name a note by: its title, each alias (front matter
-- ``aliases``, ``metadata.aliases``) and its path (``metadata.path``), folded by
-- ``fortemi.graph.links.resolution.fold`` (Python's, not SQL's lower(): one folding rule,
-- whatever the database's locale). Kept in step with every version of the note, so
-- resolving a reference is one index probe, never a scan of titles.
CREATE TABLE note_wiki_key (
    note_id  uuid NOT NULL REFERENCES note (id) ON DELETE CASCADE,
    kind     text NOT NULL CHECK (kind IN ('title', 'alias', 'path')),
    key      text NOT NULL,
    PRIMARY KEY (note_id, kind, key)
);
CREATE INDEX note_wiki_key_key_idx ON note_wiki_key (key);
