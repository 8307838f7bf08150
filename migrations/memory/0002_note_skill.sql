-- A note belongs to at most one project or one shared skill (SKILL-*); its access policy
-- is that project's or skill's, else its memory's.
ALTER TABLE note ADD COLUMN skill text;
ALTER TABLE note ADD CONSTRAINT note_single_owner CHECK (project IS NULL OR skill IS NULL);
CREATE INDEX note_skill_idx ON note (skill) WHERE skill IS NOT NULL;
