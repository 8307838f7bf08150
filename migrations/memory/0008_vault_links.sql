-- Wiki links inside vaults (fortemi.graph.links.vault): each reference's vault, its block
-- id, how it resolved and what kind of note it names; the ordered candidate keys of a
-- vault reference; vault-scoped keys of vault notes; and the vault notes by vault.
-- Runs with search_path set to the memory's schema (then public).

ALTER TABLE wiki_link
    -- the ^block id of [[note#^block]] (the heading stays in ``heading``)
    ADD COLUMN block        text,
    -- the source's vault (metadata.vault); NULL: resolved by the rules outside vaults
    ADD COLUMN vault        text,
    ADD COLUMN resolution   text NOT NULL DEFAULT 'dangling'
        CHECK (resolution IN ('path', 'suffix', 'title', 'alias', 'dangling', 'ambiguous')),
    -- the target's kind: in a project, a skill, another shared vault note; unknown when
    -- dangling or outside vaults
    ADD COLUMN target_type  text NOT NULL DEFAULT 'unknown'
        CHECK (target_type IN ('memory', 'skill', 'shared_concept', 'unknown')),
    -- how many notes matched the deciding candidate (more than one: ambiguous)
    ADD COLUMN matches      integer NOT NULL DEFAULT 0 CHECK (matches >= 0),
    -- the rank of the candidate that decided a vault reference (NULL: none did): a key
    -- ranked after it cannot change the outcome, so its changes leave the reference alone
    ADD COLUMN decided_rank smallint;

-- References resolved before this migration: the kind of key that found their note.
UPDATE wiki_link l SET resolution = COALESCE((
    SELECT k.kind FROM note_wiki_key k
    WHERE k.note_id = l.target_id AND k.key = l.target_key
    ORDER BY CASE k.kind WHEN 'path' THEN 0 WHEN 'title' THEN 1 ELSE 2 END
    LIMIT 1), 'title'), matches = 1
WHERE l.target_id IS NOT NULL;

-- A vault reference's candidate keys, in the order its rules try them (rank 0 first).
-- Every reference with a key a note gains or loses is resolved again: the key index.
CREATE TABLE wiki_link_candidate (
    source_id  uuid NOT NULL,
    ordinal    integer NOT NULL,
    rank       smallint NOT NULL CHECK (rank >= 0),
    rule       text NOT NULL CHECK (rule IN ('path', 'suffix', 'title', 'alias')),
    key        text NOT NULL,
    PRIMARY KEY (source_id, ordinal, rank),
    FOREIGN KEY (source_id, ordinal) REFERENCES wiki_link (source_id, ordinal)
        ON DELETE CASCADE
);
CREATE INDEX wiki_link_candidate_key_idx ON wiki_link_candidate (key);

-- Vault notes carry vault-scoped keys ("<vault>␟<rule>␟<key>") beside their plain ones.
ALTER TABLE note_wiki_key DROP CONSTRAINT note_wiki_key_kind_check;
ALTER TABLE note_wiki_key ADD CONSTRAINT note_wiki_key_kind_check
    CHECK (kind IN ('title', 'alias', 'path', 'vault'));

-- A vault's notes, by project: the reachable set's seed and vaultStatus's note count.
CREATE INDEX note_vault_idx ON note ((metadata ->> 'vault'), project);
