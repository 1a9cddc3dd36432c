package task

// schema holds the agents' migration steps. Append, never edit: steps 1
// and 2 lost the change sets' tables to the changes package (which
// creates them only where they are missing), so every database, old or
// new, has the same schema.
var schema = []string{`
CREATE TABLE agents (
	id                 TEXT    PRIMARY KEY,
	task               TEXT    NOT NULL UNIQUE, -- vault path of the task note; follows renames
	task_fingerprint   TEXT    NOT NULL DEFAULT '', -- last content seen, to recognise a rename
	lifecycle          TEXT    NOT NULL CHECK (lifecycle IN ('active', 'dormant', 'destroyed')),
	dormant_reason     TEXT    NOT NULL DEFAULT '',
	created_at         TEXT    NOT NULL,
	last_wake          TEXT    NOT NULL DEFAULT '',
	next_wake          TEXT    NOT NULL DEFAULT '',
	failures           INTEGER NOT NULL DEFAULT 0,
	wakes              INTEGER NOT NULL DEFAULT 0,
	template           TEXT    NOT NULL DEFAULT '', -- name@version of the last wake
	report_fingerprint TEXT    NOT NULL DEFAULT '', -- the report as margin last wrote it
	report_generator   TEXT    NOT NULL DEFAULT ''  -- model id, "offline" or "margin"
);

-- The content of each source (the task note, each linked entry) as the
-- agent last saw it in a completed wake: the base of the next wake's diffs.
CREATE TABLE agent_sources (
	agent_id    TEXT NOT NULL,
	source      TEXT NOT NULL, -- a path, or path#heading for an entry
	fingerprint TEXT NOT NULL,
	content     TEXT NOT NULL,
	PRIMARY KEY (agent_id, source)
) WITHOUT ROWID;

CREATE TABLE wake_runs (
	id                INTEGER PRIMARY KEY,
	agent_id          TEXT    NOT NULL,
	run_key           TEXT    NOT NULL,
	-- settled_key is the run key of the state after the wake's own writes
	-- (set_task_language), which is just as processed as run_key.
	settled_key       TEXT    NOT NULL DEFAULT '',
	reason            TEXT    NOT NULL,
	status            TEXT    NOT NULL CHECK (status IN ('started', 'completed', 'incomplete', 'failed')),
	detail            TEXT    NOT NULL DEFAULT '',
	full_context      INTEGER NOT NULL DEFAULT 0,
	attempts          INTEGER NOT NULL DEFAULT 1,
	turns             INTEGER NOT NULL DEFAULT 0,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	started_at        TEXT    NOT NULL,
	finished_at       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX wake_runs_agent ON wake_runs(agent_id, id);
CREATE INDEX wake_runs_key ON wake_runs(run_key);
CREATE INDEX wake_runs_settled ON wake_runs(settled_key) WHERE settled_key <> '';

-- Every model turn, tool call and tool result, written as it happens.
CREATE TABLE messages (
	id           INTEGER PRIMARY KEY,
	run_id       INTEGER NOT NULL,
	agent_id     TEXT    NOT NULL,
	role         TEXT    NOT NULL,
	content      TEXT    NOT NULL,
	tool_calls   TEXT    NOT NULL DEFAULT '', -- JSON, assistant turns
	tool_call_id TEXT    NOT NULL DEFAULT '',
	tool_name    TEXT    NOT NULL DEFAULT '',
	created_at   TEXT    NOT NULL
);
CREATE INDEX messages_agent ON messages(agent_id, id);

-- Tool calls that ran, by operation id (hash of run key, tool and canonical
-- arguments): a call already here is not applied again.
CREATE TABLE tool_calls (
	operation_id TEXT    PRIMARY KEY,
	run_id       INTEGER NOT NULL,
	agent_id     TEXT    NOT NULL,
	tool         TEXT    NOT NULL,
	args         TEXT    NOT NULL,
	deferred     INTEGER NOT NULL,
	status       TEXT    NOT NULL, -- applied | proposed | unchanged | failed | started
	result       TEXT    NOT NULL,
	created_at   TEXT    NOT NULL
);
CREATE INDEX tool_calls_agent ON tool_calls(agent_id, created_at);

-- proposals was created here until change sets got their own package:
-- see the changes package's schema (component "changes").
`, `
-- change_sets, change_items and decisions were created here until change
-- sets got their own package: see the changes package's schema (component
-- "changes"), whose first step creates them where they are missing.
SELECT 1;
`, `
-- The name of the agent's report, journal and change-set folder under the
-- output folder. It was the task's stem, so two tasks of one name in
-- different folders shared (and overwrote) each other's outputs. Existing
-- agents keep their stem; of agents sharing one the oldest keeps it, the
-- others get the name newOutputName would give them: "<stem> (<folder>)",
-- else "<stem> (<n>)" with the lowest free n from 2. Names are unique
-- without regard to case, as file names are on macOS and Windows.
ALTER TABLE agents ADD COLUMN output_name TEXT NOT NULL DEFAULT '';

CREATE TEMP TABLE named_agents AS
WITH parts AS (
	SELECT id, created_at, rowid AS seq,
		substr(task, length(rtrim(task, replace(task, '/', ''))) + 1) AS base,
		rtrim(rtrim(task, replace(task, '/', '')), '/') AS dir
	FROM agents
), stems AS (
	SELECT id, created_at, seq,
		CASE WHEN instr(base, '.') > 0 THEN substr(base, 1, length(rtrim(base, replace(base, '.', ''))) - 1) ELSE base END AS stem,
		substr(dir, length(rtrim(dir, replace(dir, '/', ''))) + 1) AS folder
	FROM parts
)
SELECT id, created_at, seq, stem, lower(stem) AS stem_key,
	ROW_NUMBER() OVER (PARTITION BY lower(stem) ORDER BY created_at, seq) AS place,
	CASE WHEN folder <> '' THEN stem || ' (' || folder || ')' ELSE '' END AS with_folder,
	'' AS output_name
FROM stems;
CREATE UNIQUE INDEX named_agents_id ON named_agents(id);
CREATE INDEX named_agents_stem ON named_agents(stem_key, place);

UPDATE named_agents SET output_name = stem WHERE place = 1;

UPDATE named_agents SET output_name = with_folder
WHERE place > 1 AND with_folder <> ''
	AND NOT EXISTS (SELECT 1 FROM named_agents o WHERE o.place = 1 AND o.stem_key = lower(named_agents.with_folder))
	AND NOT EXISTS (SELECT 1 FROM named_agents o WHERE o.place > 1 AND lower(o.with_folder) = lower(named_agents.with_folder)
		AND (o.created_at, o.seq) < (named_agents.created_at, named_agents.seq));

CREATE TEMP TABLE taken_names (name_key TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT INTO taken_names SELECT lower(output_name) FROM named_agents WHERE output_name <> '';

CREATE TEMP TABLE unnamed_agents AS
	SELECT id, stem, stem_key, ROW_NUMBER() OVER (PARTITION BY stem_key ORDER BY created_at, seq) AS k
	FROM named_agents WHERE output_name = '';
CREATE UNIQUE INDEX unnamed_agents_id ON unnamed_agents(id);

CREATE TEMP TABLE free_numbers AS
WITH RECURSIVE numbers(n) AS (
	SELECT 2 UNION ALL SELECT n + 1 FROM numbers WHERE n <= (SELECT COUNT(*) FROM named_agents)
)
SELECT g.stem_key, n, ROW_NUMBER() OVER (PARTITION BY g.stem_key ORDER BY n) AS k
FROM (SELECT DISTINCT stem_key FROM unnamed_agents) g, numbers
WHERE NOT EXISTS (SELECT 1 FROM taken_names t WHERE t.name_key = g.stem_key || ' (' || n || ')');

UPDATE named_agents SET output_name = (
	SELECT u.stem || ' (' || f.n || ')' FROM unnamed_agents u JOIN free_numbers f ON f.stem_key = u.stem_key AND f.k = u.k
	WHERE u.id = named_agents.id)
WHERE output_name = '';

UPDATE agents SET output_name = (SELECT output_name FROM named_agents WHERE named_agents.id = agents.id);
DROP TABLE named_agents;
DROP TABLE taken_names;
DROP TABLE unnamed_agents;
DROP TABLE free_numbers;
CREATE UNIQUE INDEX agents_output_name ON agents(output_name COLLATE NOCASE);
`, `
-- The template name@version each run ran, so the evolution metrics can
-- set a version against the one before it. Runs from before this step
-- stay '': their version is not known, and guessing would skew the
-- comparison.
ALTER TABLE wake_runs ADD COLUMN template TEXT NOT NULL DEFAULT '';
CREATE INDEX wake_runs_template ON wake_runs(template);
`, `
-- vault/status counts agents by lifecycle on every call; without this
-- index that reads every agent's row (a third of a millisecond for 1,000
-- agents, most of the call).
CREATE INDEX agents_lifecycle ON agents(lifecycle);
`, `
-- output_name's key (nameKey): names compare as file names do on macOS and
-- Windows, which SQLite's NOCASE (ASCII only) cannot tell. OpenStore fills
-- it for the agents this step finds.
ALTER TABLE agents ADD COLUMN output_key TEXT NOT NULL DEFAULT '';
CREATE INDEX agents_output_key ON agents(output_key);
`, `
-- A wake that found the model away (the server unreachable, the model not
-- pulled, no provider) is neither the agent's failure nor the template's:
-- it is 'offline', wrote the offline report and waits for the model. The
-- status CHECK cannot be altered in place, so the table is rebuilt.
CREATE TABLE wake_runs_new (
	id                INTEGER PRIMARY KEY,
	agent_id          TEXT    NOT NULL,
	run_key           TEXT    NOT NULL,
	settled_key       TEXT    NOT NULL DEFAULT '',
	reason            TEXT    NOT NULL,
	status            TEXT    NOT NULL CHECK (status IN ('started', 'completed', 'incomplete', 'failed', 'offline')),
	detail            TEXT    NOT NULL DEFAULT '',
	full_context      INTEGER NOT NULL DEFAULT 0,
	attempts          INTEGER NOT NULL DEFAULT 1,
	turns             INTEGER NOT NULL DEFAULT 0,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	started_at        TEXT    NOT NULL,
	finished_at       TEXT    NOT NULL DEFAULT '',
	template          TEXT    NOT NULL DEFAULT ''
);
INSERT INTO wake_runs_new (id, agent_id, run_key, settled_key, reason, status, detail, full_context, attempts, turns,
	prompt_tokens, completion_tokens, started_at, finished_at, template)
SELECT id, agent_id, run_key, settled_key, reason, status, detail, full_context, attempts, turns,
	prompt_tokens, completion_tokens, started_at, finished_at, template FROM wake_runs;
DROP TABLE wake_runs;
ALTER TABLE wake_runs_new RENAME TO wake_runs;
CREATE INDEX wake_runs_agent ON wake_runs(agent_id, id);
CREATE INDEX wake_runs_key ON wake_runs(run_key);
CREATE INDEX wake_runs_settled ON wake_runs(settled_key) WHERE settled_key <> '';
CREATE INDEX wake_runs_template ON wake_runs(template);
`, `
-- The model each run ran, as the provider named it in its replies: the
-- history of margin's writes (SPEC §11) names it beside the template
-- version, for the wake's own writes and for the change items a person
-- applies later. Runs from before this step, and runs no model answered,
-- stay ''.
ALTER TABLE wake_runs ADD COLUMN model TEXT NOT NULL DEFAULT '';
`, `
-- The language of the task's notes as set_task_language found it: margin
-- keeps it here (and in the report) and never writes it into the task
-- note, which is the person's (SPEC §1.3, §4.1). A language in the note's
-- frontmatter wins over it.
ALTER TABLE agents ADD COLUMN language TEXT NOT NULL DEFAULT '';
`, `
-- The related notes (by meaning, not linked) the agent's last completed
-- wake saw, their paths a line each: an incremental wake shows them
-- again only when they changed.
ALTER TABLE agents ADD COLUMN related TEXT NOT NULL DEFAULT '';
`}
