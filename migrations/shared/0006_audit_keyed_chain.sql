-- The audit chain becomes keyed, and segments are chained to each other
-- (fortemi/auth/audit/chain.py specifies both).
--
-- A keyed segment has an ordinal in the segment registry (1, 2, ... without gaps), the id
-- of the key that chains it, the heads it pins, and its link, which chains it to the
-- registration before it: deleting a whole segment, head included, leaves a gap or a
-- broken link. Segments written before this migration keep a null ordinal and key id and
-- verify under the unkeyed chain, anchored by the first keyed registration's pins.
--
-- client_request_id is the X-Request-Id a client sent; trace_id is the server's own.

ALTER TABLE public.rbac_audit_segment
    ADD COLUMN ordinal   bigint UNIQUE CHECK (ordinal >= 1),
    ADD COLUMN key_id    text,
    ADD COLUMN pins      jsonb,
    ADD COLUMN prev_link text,
    ADD COLUMN link      text,
    ADD CONSTRAINT rbac_audit_segment_keyed CHECK (
        (ordinal IS NULL AND key_id IS NULL AND pins IS NULL AND prev_link IS NULL
            AND link IS NULL)
        OR (ordinal IS NOT NULL AND key_id IS NOT NULL AND pins IS NOT NULL
            AND prev_link IS NOT NULL AND link IS NOT NULL)
    );

ALTER TABLE public.rbac_audit_log ADD COLUMN client_request_id text;
