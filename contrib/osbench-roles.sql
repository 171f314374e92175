-- PostgreSQL roles for a shared osbench store (docs/running-workers-safely.md,
-- "PostgreSQL roles"): submitting jobs is not administering the store. Run
-- it as the store's owner (the admin role), after osbench created the schema
-- (any osbench command against the database, run as the owner, does that),
-- then give each role a password (\password osbench_submit). The queue's
-- tests run this file (tests/queue/policy.rs). Left out: per-row rights (the
-- jobs table does not record who submitted a row).

-- Submitters: queue jobs and read the queue, nothing else (no UPDATE: they
-- cannot cancel or change any job, nor touch runs or change points).
CREATE ROLE osbench_submit LOGIN;
GRANT SELECT ON osbench_schema, workers, jobs TO osbench_submit;
GRANT INSERT ON jobs TO osbench_submit;
GRANT USAGE ON SEQUENCE jobs_id_seq TO osbench_submit;

-- Workers: register, claim and end jobs, store runs (not remove them, nor
-- change change points).
CREATE ROLE osbench_worker LOGIN;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO osbench_worker;
GRANT INSERT, UPDATE ON workers, jobs TO osbench_worker;
GRANT INSERT ON runs, series, run_meta TO osbench_worker;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO osbench_worker;

-- Readers (dashboards, compare, history): every table, read only.
CREATE ROLE osbench_read LOGIN;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO osbench_read;
