// margin mcp driven by the official MCP TypeScript SDK's stdio client, as
// Claude Desktop, Claude Code or Cursor would drive it: list the tools,
// search, read, be refused outside the vault, propose an edit, see the note
// unchanged, approve it with `margin approve`, see the change; and bad input
// that is an error each time while the server stays up.
//
// MARGIN_BIN is the margin binary (editors/test.sh builds it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const bin = process.env.MARGIN_BIN;
assert.ok(bin, "MARGIN_BIN names the margin binary");
const here = path.dirname(fileURLToPath(import.meta.url));

function sampleVault() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "margin-mcp-"));
  const vault = path.join(dir, "vault");
  fs.cpSync(path.join(here, "..", "..", "..", "..", "testdata", "vault"), vault, { recursive: true });
  fs.writeFileSync(path.join(dir, "secret.md"), "outside the vault\n");
  return { dir, vault };
}

test("margin mcp with the TypeScript SDK's stdio client", async (t) => {
  const { dir, vault } = sampleVault();
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // No model: ask degrades, and nothing here needs one.
  const env = { ...process.env, MARGIN_LOG_LEVEL: "warn", OLLAMA_HOST: "http://127.0.0.1:9" };
  const transport = new StdioClientTransport({ command: bin, args: ["mcp", "--vault", vault], env, stderr: "inherit" });
  const client = new Client({ name: "ts-e2e", version: "1.0.0" });
  await client.connect(transport);
  t.after(() => client.close());

  const { tools } = await client.listTools();
  const names = tools.map((x) => x.name).sort();
  assert.deepEqual(names, ["ask", "get_report", "get_review", "list_changes", "list_tasks", "log_entry", "propose_edit", "propose_task_change", "read_note", "related_notes", "search_notes"]);
  const byName = Object.fromEntries(tools.map((x) => [x.name, x]));
  assert.equal(byName.search_notes.annotations.readOnlyHint, true);
  assert.equal(byName.propose_edit.annotations.readOnlyHint, false);
  assert.deepEqual(byName.propose_edit.inputSchema.properties.kind.enum, ["create", "append", "replace"]);

  const call = (name, args) => client.callTool({ name, arguments: args });
  const up = async () => {
    const r = await call("list_changes", {});
    assert.ok(!r.isError, "the server answers after bad input");
    return r.structuredContent.change_sets;
  };

  const found = await call("search_notes", { query: "invoice export", limit: 3 });
  assert.ok(!found.isError);
  assert.equal(found.structuredContent.hits[0].path, "Tasks/Ship invoice export.md");

  const read = await call("read_note", { path: "Tasks/Ship invoice export.md" });
  assert.ok(!read.isError);
  assert.equal(read.structuredContent.frontmatter.status, "in-progress");
  assert.match(read.content[0].text, /Acme's finance team/);

  for (const p of ["../secret.md", path.join(dir, "secret.md"), "Tasks/../../secret.md"]) {
    const r = await call("read_note", { path: p });
    assert.ok(r.isError, `read_note ${p} is refused`);
    assert.doesNotMatch(r.content[0].text, /outside the vault\n/);
  }

  const note = path.join(vault, "Reference", "Acme.md");
  const before = fs.readFileSync(note, "utf8");
  const proposed = await call("propose_edit", { path: "Reference/Acme.md", kind: "append", text: "- Prefers CSV exports", reason: "said so on today's call" });
  assert.ok(!proposed.isError, proposed.content[0].text);
  const { change_set: id, file } = proposed.structuredContent;
  assert.match(proposed.content[0].text, /Nothing has changed yet/);
  assert.equal(fs.readFileSync(note, "utf8"), before, "the note is unchanged before approval");
  assert.match(fs.readFileSync(path.join(vault, file), "utf8"), /\+- Prefers CSV exports/);

  const approved = execFileSync(bin, ["approve", id, "--vault", vault], { env, encoding: "utf8" });
  assert.match(approved, /confirmed/);
  assert.equal(fs.readFileSync(note, "utf8"), before.trimEnd() + "\n- Prefers CSV exports\n");
  assert.deepEqual(await up(), [], "no change set is open after the approval");
  const all = await call("list_changes", { status: "all" });
  const mine = all.structuredContent.change_sets.find((s) => s.id === id);
  assert.equal(mine.proposed_by, "mcp:ts-e2e");
  assert.equal(mine.items[0].status, "confirmed");

  // Bad input: an error each, and the server stays up.
  const bad = [
    ["write_note", { path: "x.md", text: "x" }],
    ["read_note", { path: 42 }],
    ["search_notes", { query: "x", limit: "ten" }],
    ["propose_edit", { path: "Reference/Acme.md", kind: "append", text: "x".repeat(10 << 20), reason: "big" }],
    ["propose_edit", { path: "Reference/Acme.md", kind: "replace", old_text: "\n", text: "x", reason: "twice" }],
    ["propose_edit", { path: "Reference/Acme.md", kind: "replace", old_text: "not in the note", text: "x", reason: "none" }],
  ];
  for (const [name, args] of bad) {
    const r = await call(name, args);
    assert.ok(r.isError, `${name} ${JSON.stringify(args).slice(0, 80)} is a tool error`);
    await up();
  }
  assert.equal(fs.readFileSync(note, "utf8"), before.trimEnd() + "\n- Prefers CSV exports\n", "bad input changed nothing");

  const asked = await call("ask", { question: "How is the invoice export going?" });
  assert.ok(!asked.isError);
  assert.equal(asked.structuredContent.status, "degraded");
  assert.match(asked.content[0].text, /Degraded answer/);
});
