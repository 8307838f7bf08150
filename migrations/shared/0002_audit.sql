-- The tamper-evident audit log of authorization decisions (fortemi/auth/audit).
--
-- Rows are chained per segment (one segment per writer process): each row's chain_hash
-- covers its content and the previous row's chain_hash, so editing, deleting or reordering
-- rows is detected by `fortemi.auth.audit.verify`. rbac_audit_segment holds the head of
-- each chain, written in the same statement as the rows, so a deleted tail is detected too.

CREATE TABLE public.rbac_audit_segment (
    segment     text PRIMARY KEY,
    started_at  timestamptz NOT NULL DEFAULT now(),
    host        text,
    pid         integer,
    last_seq    bigint NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
    last_hash   text NOT NULL
);

CREATE TABLE public.rbac_audit_log (
    id              bigserial PRIMARY KEY,
    at              timestamptz NOT NULL,
    user_id         text NOT NULL,
    groups          text[] NOT NULL DEFAULT '{}',
    resource_type   text NOT NULL,
    resource_name   text,
    memory          text,
    action          text NOT NULL,
    decision        text NOT NULL CHECK (decision IN ('allow', 'deny')),
    reason          text NOT NULL,
    policy_version  text NOT NULL,
    trace_id        text,
    client_addr     text,
    job_id          text,
    details         jsonb NOT NULL DEFAULT '{}',
    segment         text NOT NULL,
    seq             bigint NOT NULL CHECK (seq >= 1),
    prev_hash       text NOT NULL,
    chain_hash      text NOT NULL,
    UNIQUE (segment, seq)
);

-- The auditors' questions: a time window, one user's history, one resource's history,
-- denials over time. The (segment, seq) unique index serves the verifier's walk.
CREATE INDEX rbac_audit_log_at ON public.rbac_audit_log (at);
CREATE INDEX rbac_audit_log_user_at ON public.rbac_audit_log (user_id, at);
CREATE INDEX rbac_audit_log_resource_at
    ON public.rbac_audit_log (resource_type, resource_name, at);
CREATE INDEX rbac_audit_log_decision_at ON public.rbac_audit_log (decision, at);
