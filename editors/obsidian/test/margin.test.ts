// The plugin's protocol module against the real margin binary, with
// bin/fakeollama as the model that proposes one change and asks back about
// one question.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { Margin, PendingChange, notFound, relatedView, review, sideBySide } from '../src/margin';

const root = resolve(__dirname, '../../..');

test('pending changes are listed and applied; a diff review takes one, leaves one, finds one stale; reports come back; questions are answered, clarified or not', { timeout: 60000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'margin-obsidian-'));
  const vault = join(dir, 'vault');
  cpSync(join(root, 'testdata/vault'), vault, { recursive: true });
  const fake = spawn(process.env.MARGIN_FAKE_OLLAMA ?? join(root, 'bin/fakeollama'), [], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => {
    fake.stdin.end(); // fakeollama serves until its stdin closes
    rmSync(dir, { recursive: true, force: true });
  });
  const url: string = await new Promise((ok) => createInterface({ input: fake.stdout }).once('line', ok));
  const margin = await Margin.start(process.env.MARGIN_BIN ?? join(root, 'bin/margin'), vault, {
    ...process.env,
    OLLAMA_HOST: url,
    MARGIN_AGENTS_AUTO_CREATE: 'true', // as a person runs it: every task gets an agent
    MARGIN_AGENTS_QUIET_PERIOD: '250ms',
    MARGIN_LLM_RETRY_LLM_RETRY: '0',
  });
  t.after(() => margin.stop());

  // Every task has an agent: fakeollama has two of them propose.
  const pendingOn = async (task: string, n: number): Promise<PendingChange[]> => {
    let pending: PendingChange[] = [];
    for (const end = Date.now() + 30000; pending.length < n && Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
      pending = (await margin.pendingChanges()).filter((p) => p.set.task === task);
    }
    return pending;
  };
  const pending = await pendingOn('Tasks/Ship invoice export.md', 1);
  assert.equal(pending.length, 1, 'the change fakeollama proposes');
  const [p] = pending;
  assert.equal(p.set.task, 'Tasks/Ship invoice export.md');
  assert.equal(p.item.summary, 'Set estimate to 2h');

  assert.match(readFileSync(join(vault, p.set.task), 'utf8'), /\nestimate: 1d\n/);
  assert.equal((await margin.decide(p, 'confirmed')).status, 'confirmed');
  assert.match(readFileSync(join(vault, p.set.task), 'utf8'), /\nestimate: 2h\n/);
  assert.deepEqual((await margin.pendingChanges()).filter((q) => q.set.task === p.set.task), []);

  // The review view of each of the three items of Renew passport's set.
  const passport = 'Tasks/Renew passport.md';
  const items = await pendingOn(passport, 3);
  assert.deepEqual(items.map((q) => q.item.id), ['c1', 'c2', 'c3']);
  const set = items[0].set.id;
  const disk = () => readFileSync(join(vault, passport), 'utf8');
  const before = disk();
  const c1 = await margin.preview(set, 'c1');
  assert.equal(c1.before, before);
  const r1 = review(c1);
  assert.ok(!('stale' in r1), JSON.stringify(r1));
  assert.deepEqual(r1.properties, ['status: open → in-progress']);
  assert.deepEqual(
    r1.rows.filter((r) => r.kind !== 'same'),
    [{ kind: 'changed', left: 'status: open', right: 'status: in-progress' }],
  );
  assert.equal(r1.rows.length, before.split('\n').length - 1, 'every line of the note, once');
  assert.equal((await margin.decideItem(set, 'c1', 'confirmed')).status, 'confirmed');
  assert.equal(disk(), c1.after, 'Apply wrote what the view showed on the right');

  const r3 = review(await margin.preview(set, 'c3'));
  assert.ok(!('stale' in r3), JSON.stringify(r3));
  assert.deepEqual(r3.properties, []);
  assert.deepEqual(r3.rows.filter((r) => r.kind !== 'same'), [{ kind: 'added', right: '- [ ] Book the Seoul flights' }]);
  const rejected = await margin.decideItem(set, 'c3', 'rejected', 'not yet');
  assert.deepEqual([rejected.status, rejected.reason], ['rejected', 'not yet']);
  assert.equal(disk(), c1.after, 'Reject wrote nothing');

  // The person sets the due date by hand: c2's view says it no longer applies.
  writeFileSync(join(vault, passport), disk().replace('due: 2026-12-15', 'due: 2026-12-20'));
  assert.deepEqual(review(await margin.preview(set, 'c2')), {
    stale: `"Set due date to 2026-12-10 (because: leave time for the post)" no longer applies to ${passport}: the task's due date changed since it was proposed`,
  });

  const report = await margin.report(p.set.task);
  assert.ok(report?.tldr, `report of ${p.set.task}: ${JSON.stringify(report)}`);
  assert.equal(await margin.report('Daily/2026-11-21.md'), null, 'a daily note has no report');

  const answer = await margin.ask('bench press');
  assert.ok(answer.citations?.length, JSON.stringify(answer));

  // fakeollama asks two things back about this question (one with options),
  // saying why, then answers it with a citation.
  const asked = await margin.ask("Was stress behind Friday's heavy bench?");
  assert.equal(asked.status, 'needs_clarification', JSON.stringify(asked));
  const why = 'Your notes do not say how Friday felt.';
  const prompted: [string, string, string[] | null][] = [];
  const final = await margin.clarify(asked, async (q, reason) => {
    prompted.push([reason, q.question, q.options]);
    return q.options?.length ? q.options[q.options.length - 1] : 'nothing';
  });
  assert.deepEqual(prompted, [
    [why, 'How stressed were you on Friday?', ['not at all', 'somewhat', 'very']],
    [why, 'What did you eat before the session?', []],
  ]);
  assert.equal(final.status, 'answered', JSON.stringify(final));
  assert.match(final.answer, /very stressed/);
  // The model's citation first, then what a plain search of the question
  // cites: an answer with a model cites at least what one without would.
  const cited = final.citations?.map((c) => `${c.path}#${c.heading}`) ?? [];
  assert.equal(cited[0], 'Daily/2026-11-13.md#18:15', JSON.stringify(cited));
  assert.ok(cited.length > 1 && new Set(cited).size === cited.length, JSON.stringify(cited));
  assert.equal(notFound(final), null, 'a full answer has no gaps to show');

  // Cancelling the first prompt declines: margin answers with what it has.
  const again = await margin.ask("Was stress behind Friday's heavy bench?");
  assert.equal(again.status, 'needs_clarification', JSON.stringify(again));
  let cancelled = 0;
  const declined = await margin.clarify(again, async () => {
    cancelled++;
    return undefined;
  });
  assert.equal(cancelled, 1, 'no question after the cancelled one');
  assert.equal(declined.status, 'partial', JSON.stringify(declined));
  assert.deepEqual(notFound(declined), {
    heading: 'Not found in your notes',
    gaps: ['how stressed you were on Friday', 'what you ate before the session'],
  });
});

test("the latest review: the plugin's command asks reviews/latest and opens its note", { timeout: 60000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'margin-obsidian-'));
  const vault = join(dir, 'vault');
  cpSync(join(root, 'testdata/vault'), vault, { recursive: true });
  // A weekly review over a folder that holds nothing: it runs as the
  // server starts, with nothing new, so it needs no model.
  mkdirSync(join(vault, 'Margin/Reviews'));
  writeFileSync(join(vault, 'Margin/Reviews/weekly.md'), '---\nschedule: weekly mon 08:00\nscope:\n  folders: [Nowhere]\n---\n# Weekly\n\nWhat slipped.\n');
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const margin = await Margin.start(process.env.MARGIN_BIN ?? join(root, 'bin/margin'), vault, {
    ...process.env,
    OLLAMA_HOST: 'http://127.0.0.1:1',
    MARGIN_LLM_RETRY_LLM_RETRY: '0',
  });
  t.after(() => margin.stop());
  // No model to embed with: the Related notes view says why it lists none.
  const none = relatedView(await margin.related('Reference/Sleep.md'));
  assert.deepEqual(none.rows, []);
  assert.match(none.empty ?? '', /^No related notes: .*not embedded/);
  let review = null;
  for (const end = Date.now() + 30000; !review && Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    review = await margin.latestReview('weekly').catch(() => null);
  }
  assert.ok(review, 'no weekly review');
  assert.match(review.path, /^Margin\/Reviews\/weekly\/\d{4}-\d{2}-\d{2}\.md$/);
  assert.equal(readFileSync(join(vault, review.path), 'utf8'), review.content);
  await assert.rejects(margin.latestReview('monthly'), /no Margin\/Reviews\/monthly\.md/);
});

test('the Related notes view lists the notes near the active one once the vault is embedded', { timeout: 60000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'margin-obsidian-'));
  const vault = join(dir, 'vault');
  cpSync(join(root, 'testdata/vault'), vault, { recursive: true });
  const fake = spawn(process.env.MARGIN_FAKE_OLLAMA ?? join(root, 'bin/fakeollama'), ['-embed'], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => {
    fake.stdin.end();
    rmSync(dir, { recursive: true, force: true });
  });
  const url: string = await new Promise((ok) => createInterface({ input: fake.stdout }).once('line', ok));
  const margin = await Margin.start(process.env.MARGIN_BIN ?? join(root, 'bin/margin'), vault, {
    ...process.env,
    OLLAMA_HOST: url,
    MARGIN_AGENTS_AUTO_CREATE: 'false',
    MARGIN_LLM_RETRY_LLM_RETRY: '0',
  });
  t.after(() => margin.stop());
  const note = 'Reference/Sleep.md';
  let shown = relatedView({ notes: [] });
  for (const end = Date.now() + 45000; shown.rows.length === 0 && Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
    shown = relatedView(await margin.related(note));
  }
  assert.ok(shown.rows.length > 0, `no related notes once embedded: ${shown.empty}`);
  assert.equal(shown.empty, undefined);
  const links = readFileSync(join(vault, note), 'utf8');
  for (const r of shown.rows) {
    assert.notEqual(r.path, note, 'the note itself');
    assert.equal(r.name, r.path.replace(/^.*\//, '').replace(/\.md$/, ''));
    assert.ok(!['', '#', '|'].some((end) => links.includes(`[[${r.name}${end || ']]'}`)), `${r.name} is linked from ${note}`);
    // A click opens the note at the line of its nearest section.
    const lines = readFileSync(join(vault, r.path), 'utf8').split('\n');
    assert.ok(r.line >= 1 && r.line <= lines.length, `${r.path} line ${r.line}`);
  }
  await assert.rejects(margin.related('Nowhere.md'), /not an indexed note/);
});

test('sideBySide lines up two versions in rows', () => {
  assert.deepEqual(sideBySide('a\nb\nc\n', 'a\nB\nc\nd\n'), [
    { kind: 'same', left: 'a', right: 'a' },
    { kind: 'changed', left: 'b', right: 'B' },
    { kind: 'same', left: 'c', right: 'c' },
    { kind: 'added', right: 'd' },
  ]);
  assert.deepEqual(sideBySide('a\nx\ny\nb\n', 'a\nb\n'), [
    { kind: 'same', left: 'a', right: 'a' },
    { kind: 'removed', left: 'x' },
    { kind: 'removed', left: 'y' },
    { kind: 'same', left: 'b', right: 'b' },
  ]);
  assert.deepEqual(sideBySide('', 'new\n'), [{ kind: 'added', right: 'new' }], 'a note to create');
  assert.deepEqual(sideBySide('p\nq\nr\ns\n', 'p\nr\nq\ns\n').filter((r) => r.kind !== 'same').length, 2, 'a swap is one line out and one in');
});
