// Drives the real margin binary the way the extension does: the same
// initialize params, requests shaped by src/protocol.ts, and the answers
// VS Code gives to the server's own requests. A fake Ollama (bin/fakeollama)
// makes two task agents propose change sets (one for a diff review) and the
// query flow ask back about one question.
import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
import * as margin from '../src/protocol';
import { initializeParams } from './languageclient';

const root = resolve(__dirname, '../../../..');
const bin = process.env.MARGIN_BIN ?? join(root, 'bin/margin');
const fakeBin = process.env.MARGIN_FAKE_OLLAMA ?? join(root, 'bin/fakeollama');
const task = 'Tasks/Ship invoice export.md';

let dir: string;
let vault: string;
let fake: ChildProcess;
let server: ChildProcess;
let conn: MessageConnection;
const stderr: string[] = [];

/** The documents "open in VS Code": what didOpen/didChange told the server. */
const docs = new Map<string, { version: number; text: string }>();

/** The documents the server asked VS Code to show (window/showDocument). */
const shownDocs: string[] = [];

interface LineEdit {
  range: { start: { line: number }; end: { line: number } };
  newText: string;
}

interface ApplyEditParams {
  edit: { documentChanges: { textDocument: { uri: string; version: number }; edits: LineEdit[] }[] };
}

// applyEdits applies whole-line edits (the only kind margin sends) to text.
function applyEdits(text: string, edits: LineEdit[]): string {
  const lines = text.split(/(?<=\n)/);
  for (const e of [...edits].sort((a, b) => b.range.start.line - a.range.start.line)) {
    lines.splice(e.range.start.line, e.range.end.line - e.range.start.line, e.newText);
  }
  return lines.join('');
}

function openDoc(rel: string): string {
  const uri = pathToFileURL(join(vault, rel)).href;
  const text = readFileSync(join(vault, rel), 'utf8');
  docs.set(uri, { version: 1, text });
  conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'markdown', version: 1, text } });
  return uri;
}

async function waitFor<T>(what: string, get: () => Promise<T | undefined>, ms = 20000): Promise<T> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    const v = await get();
    if (v !== undefined) {
      return v;
    }
  }
  throw new Error(`timed out waiting for ${what}; server stderr:\n${stderr.join('')}`);
}

// Each step fails on its own rather than hanging until test.sh's timeout.
const limit = { timeout: 60000 };

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'margin-vscode-'));
  vault = join(dir, 'vault');
  cpSync(join(root, 'testdata/vault'), vault, { recursive: true });
  // A daily review over a folder that holds nothing: it runs as the server
  // starts and has nothing new, so it calls no model.
  mkdirSync(join(vault, 'Margin/Reviews'));
  writeFileSync(join(vault, 'Margin/Reviews/daily.md'), '---\nschedule: daily 07:00\nscope:\n  folders: [Nowhere]\n---\n# Daily\n\nWhat is due.\n');

  // -embed: the vault is embedded in the background, so notes have related notes.
  fake = spawn(fakeBin, ['-embed'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const url: string = await new Promise((ok) => createInterface({ input: fake.stdout! }).once('line', ok));

  server = spawn(bin, margin.serverArgs, {
    env: { ...process.env, OLLAMA_HOST: url, MARGIN_AGENTS_AUTO_CREATE: 'false', MARGIN_AGENTS_QUIET_PERIOD: '250ms', MARGIN_WATCH_DEBOUNCE: '30ms', MARGIN_LLM_RETRY_LLM_RETRY: '0' },
  });
  server.stderr!.on('data', (b: Buffer) => stderr.push(b.toString()));
  conn = createMessageConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));

  // What VS Code answers: it applies an edit to an open document and sends
  // the new text back as a didChange.
  conn.onRequest('workspace/applyEdit', (p: ApplyEditParams): { applied: boolean; failureReason?: string } => {
    for (const change of p.edit.documentChanges) {
      const doc = docs.get(change.textDocument.uri);
      if (!doc || doc.version !== change.textDocument.version) {
        return { applied: false, failureReason: `${change.textDocument.uri} is not at version ${change.textDocument.version}` };
      }
      doc.text = applyEdits(doc.text, change.edits);
      doc.version++;
      conn.sendNotification('textDocument/didChange', {
        textDocument: { uri: change.textDocument.uri, version: doc.version },
        contentChanges: [{ text: doc.text }],
      });
    }
    return { applied: true };
  });
  conn.onRequest('window/showDocument', (p: { uri: string }) => {
    shownDocs.push(p.uri);
    return { success: true };
  });
  conn.onRequest('workspace/configuration', (p: { items: unknown[] }) => p.items.map(() => null));
  for (const method of ['client/registerCapability', 'client/unregisterCapability', 'window/workDoneProgress/create', 'workspace/codeLens/refresh']) {
    conn.onRequest(method, () => null);
  }
  conn.listen();

  const init = await conn.sendRequest<{ capabilities: { positionEncoding?: string; executeCommandProvider: { commands: string[] } } }>(
    'initialize',
    await initializeParams(vault),
  );
  // vscode-languageclient refuses a server that picks another encoding.
  assert.ok([undefined, 'utf-16'].includes(init.capabilities.positionEncoding), `positionEncoding ${init.capabilities.positionEncoding}`);
  assert.ok(init.capabilities.executeCommandProvider.commands.includes('margin.ask'));
  conn.sendNotification('initialized', {});
}, limit);

after(async () => {
  if (conn) {
    await conn.sendRequest('shutdown').catch(() => undefined);
    conn.sendNotification('exit');
  }
  fake?.stdin?.end(); // fakeollama serves until its stdin closes
  await new Promise((ok) => (server?.exitCode !== null ? ok(null) : server.once('exit', ok)));
  conn?.dispose();
  rmSync(dir, { recursive: true, force: true });
}, limit);

interface Lens {
  range: { start: { line: number } };
  command: { title: string; command: string; arguments: unknown[] };
}

test('a proposed change is listed, shown as lenses and applied by its Apply lens', limit, async () => {
  await conn.sendRequest('agents/create', { task });
  const [p] = await waitFor('the proposed change', async () => {
    const pending = await margin.pendingChanges(conn);
    return pending.length > 0 ? pending : undefined;
  });
  assert.equal(p.set.task, task);
  assert.equal(p.item.summary, 'Set estimate to 2h');

  // The person opens the change set file: Apply and Reject on the item's line.
  const uri = openDoc(p.set.path);
  const lenses = await conn.sendRequest<Lens[]>('textDocument/codeLens', { textDocument: { uri } });
  assert.deepEqual(lenses.map((l) => `${l.command.title}=${l.command.command}`), ['Apply=margin.confirm', 'Reject=margin.reject', 'Diff=margin.preview']);
  const line = docs.get(uri)!.text.split('\n')[lenses[0].range.start.line];
  assert.match(line, /^- \[ \] Set estimate to 2h \^c1$/);

  // Clicking Apply: vscode-languageclient sends the lens's command as is.
  assert.match(readFileSync(join(vault, task), 'utf8'), /\nestimate: 1d\n/);
  const set = await margin.executeCommand<margin.ChangeSet>(conn, lenses[0].command.command, lenses[0].command.arguments);
  assert.equal(margin.outcome(set, p.item.id), 'confirmed');
  assert.match(readFileSync(join(vault, task), 'utf8'), /\nestimate: 2h\n/, 'the task note on disk');
  assert.match(docs.get(uri)!.text, /\n- \[x\] Set estimate to 2h /, 'the open change set file, edited through workspace/applyEdit');
  assert.deepEqual(await margin.pendingChanges(conn), []);
});

test('a diff review: each item of a set opens as a diff, one applied, one rejected, a stale one said so', limit, async () => {
  // fakeollama's first wake of this task proposes its status, its due date
  // and a checklist item.
  const passport = 'Tasks/Renew passport.md';
  await conn.sendRequest('agents/create', { task: passport });
  const items = await waitFor('the three proposed changes', async () => {
    const pending = (await margin.pendingChanges(conn)).filter((p) => p.set.task === passport);
    return pending.length === 3 ? pending : undefined;
  });
  const set = items[0].set;
  const reviews = new margin.Reviews(conn);
  const disk = () => readFileSync(join(vault, passport), 'utf8');
  const before = disk();

  // The Diff lens on c1's line runs margin.preview; VS Code's middleware
  // shows what it returns as a diff of two margin-preview documents.
  const uri = openDoc(set.path);
  const lenses = await conn.sendRequest<Lens[]>('textDocument/codeLens', { textDocument: { uri } });
  const diffLens = lenses.find((l) => l.command.title === 'Diff' && l.command.arguments[1] === 'c1')!;
  assert.equal(diffLens.command.command, 'margin.preview');
  const shown = reviews.show(await margin.executeCommand<margin.ChangePreview>(conn, diffLens.command.command, diffLens.command.arguments));
  assert.ok('diff' in shown, JSON.stringify(shown));
  const { diff } = shown;
  assert.equal(diff.title, 'Renew passport: Set status to in-progress (because: the form is in) — status: open → in-progress');
  assert.equal(diff.before.path, '/' + passport);
  assert.deepEqual(margin.parsePreviewQuery(diff.after.query), { set: set.id, item: 'c1', side: 'after' });
  assert.equal(reviews.content(diff.before.query), before, 'the left side is the note as it is');
  assert.equal(reviews.content(diff.after.query), before.replace('status: open', 'status: in-progress'), 'the right side is the note after c1');

  // c3 opens in a diff of its own beside c1's; each is taken or left alone.
  const c3 = await reviews.open(set.id, 'c3');
  assert.ok('diff' in c3, JSON.stringify(c3));
  assert.equal(c3.diff.title, 'Renew passport: Add checklist item "Book the Seoul flights"');
  assert.match(reviews.content(c3.diff.after.query), /\n- \[ \] Track the application 📅 2026-12-08\n- \[ \] Book the Seoul flights\n/);

  // Apply in c1's diff title writes exactly its right side.
  const previewed = reviews.content(diff.after.query);
  assert.equal(await reviews.decide(diff.after.query, 'confirmed'), 'margin: Set status to in-progress (because: the form is in): confirmed');
  assert.equal(disk(), previewed);
  assert.equal(reviews.content(diff.after.query), '', 'a decided item is no longer under review');
  // Reject in c3's leaves the note alone.
  assert.equal(await reviews.decide(c3.diff.after.query, 'rejected', 'not yet'), 'margin: Add checklist item "Book the Seoul flights": rejected');
  assert.equal(disk(), previewed);

  // The person sets the due date by hand: c2 no longer applies, and its
  // review says so instead of showing a diff.
  writeFileSync(join(vault, passport), previewed.replace('due: 2026-12-15', 'due: 2026-12-20'));
  const stale = await reviews.open(set.id, 'c2');
  assert.ok('stale' in stale, JSON.stringify(stale));
  assert.equal(stale.stale, `margin: "Set due date to 2026-12-10 (because: leave time for the post)" no longer applies to ${passport}: the task's due date changed since it was proposed`);
});

test('a note shows a Related lens once the vault is embedded; clicking it opens the nearest note', limit, async () => {
  const note = 'Reference/Sleep.md';
  const uri = openDoc(note);
  // The lens and the click each ask for the nearest notes: with the vault
  // still embedding in between (the notes the tests above edited), the two
  // could differ.
  await waitFor(
    'the vault embedded',
    async () => {
      const e = (await conn.sendRequest<margin.StatusResult>('vault/status')).embedding;
      return e.state === 'idle' && e.left === 0 && e.embedded > 0 ? e : undefined;
    },
    45000,
  );
  const related = await waitFor(
    'the Related lens',
    async () => (await conn.sendRequest<Lens[]>('textDocument/codeLens', { textDocument: { uri } })).find((l) => l.command.title.startsWith('Related: ')),
    45000,
  );
  assert.equal(related.range.start.line, 0);
  assert.equal(related.command.command, 'margin.showRelated');
  const res = await margin.executeCommand<margin.ShowRelatedResult>(conn, related.command.command, related.command.arguments);
  assert.ok(res.shown && res.notes && res.notes.length > 0);
  const names = related.command.title.slice('Related: '.length).split(', ');
  assert.equal(names[0], res.notes[0].path.replace(/^.*\//, '').replace(/\.md$/, ''));
  assert.equal(shownDocs.at(-1), pathToFileURL(join(vault, res.notes[0].path)).href);
});

test("the diff editor's title bar offers Apply and Reject on margin-preview documents only", () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8'));
  const titled = (pkg.contributes.menus['editor/title'] as { command: string; when: string }[]).map((m) => `${m.command} when ${m.when}`);
  assert.deepEqual(titled, [
    `margin.reviewApply when resourceScheme == ${margin.previewScheme}`,
    `margin.reviewReject when resourceScheme == ${margin.previewScheme}`,
  ]);
  const declared = (pkg.contributes.commands as { command: string }[]).map((c) => c.command);
  for (const c of ['margin.review', 'margin.reviewApply', 'margin.reviewReject']) {
    assert.ok(declared.includes(c), `${c} is not among the contributed commands`);
  }
});

test('the latest review opens: margin.openReview asks reviews/latest for its note', limit, async () => {
  const r = await waitFor('the daily review', () => margin.latestReview(conn, 'daily').catch(() => undefined));
  assert.match(r.path, /^Margin\/Reviews\/daily\/\d{4}-\d{2}-\d{2}\.md$/);
  assert.equal(r.generatedBy, 'offline');
  assert.equal(readFileSync(join(vault, r.path), 'utf8'), r.content);
  assert.match(r.content, /no model call/);
});

test('margin.ask answers with citations that link into the vault', limit, async () => {
  const question = 'bench press';
  const answer = await margin.ask(conn, question);
  assert.ok(answer.citations?.length, `citations of ${JSON.stringify(answer)}`);
  const md = margin.answerMarkdown(question, answer, pathToFileURL(vault).href);
  const c = answer.citations![0];
  assert.ok(md.includes(`](${pathToFileURL(join(vault, c.path)).href}#L${c.line})`), md);
});

test('an answer whose notes were searched by keyword only says why under it', () => {
  const a = { sessionId: 's', type: 'query', status: 'degraded', answer: 'No answer.', citations: [], confidence: 'none', gaps: [], questions: [], transitions: [] };
  assert.match(margin.answerMarkdown('q', { ...a, keywordOnly: 'no vectors yet' }, 'file:///v'), /\n_degraded · searched by keyword: no vectors yet_$/);
  assert.match(margin.answerMarkdown('q', a, 'file:///v'), /\n_degraded_$/);
});

test('a question margin needs clarified is answered through the prompts, then cited', limit, async () => {
  // fakeollama asks two things back about this question (one with options),
  // saying why with the first.
  const question = "Was stress behind Friday's heavy bench?";
  const asked = await margin.ask(conn, question);
  assert.equal(asked.status, 'needs_clarification', JSON.stringify(asked));
  const prompted: [string, string, string[] | null][] = [];
  const answer = await margin.clarify(conn, asked, async (q, why) => {
    prompted.push([why, q.question, q.options]);
    return q.options?.length ? q.options[q.options.length - 1] : 'nothing';
  });
  assert.deepEqual(prompted, [
    ['Your notes do not say how Friday felt.', 'How stressed were you on Friday?', ['not at all', 'somewhat', 'very']],
    ['', 'What did you eat before the session?', []],
  ]);
  assert.equal(answer.status, 'answered', JSON.stringify(answer));
  const md = margin.answerMarkdown(question, answer, pathToFileURL(vault).href);
  assert.match(md, /very stressed/);
  assert.ok(md.includes(`- [Daily/2026-11-13.md › 18:15](${pathToFileURL(join(vault, 'Daily/2026-11-13.md')).href}#L`), md);

  // Escape on the first prompt declines: margin answers with what it has.
  const again = await margin.ask(conn, question);
  assert.equal(again.status, 'needs_clarification', JSON.stringify(again));
  let cancelled = 0;
  const declined = await margin.clarify(conn, again, async () => {
    cancelled++;
    return undefined;
  });
  assert.equal(cancelled, 1, 'no question after the cancelled one');
  assert.equal(declined.status, 'partial', JSON.stringify(declined));
  // What margin could not find is in the answer shown.
  const partial = margin.answerMarkdown(question, declined, pathToFileURL(vault).href);
  assert.ok(
    partial.includes('\n## Not found in your notes\n\n- how stressed you were on Friday\n- what you ate before the session\n'),
    partial,
  );
});
