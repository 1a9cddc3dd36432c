// margin serve and what the plugin asks of it, without Obsidian: the Node
// test drives the real server through this module.
import { ChildProcess, spawn } from 'child_process';
import { pathToFileURL } from 'url';
import { MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
// margin's types come from protocol.gen.ts, which go generate writes from
// the server's Go package server/protocol.
import type { Answer, ChangeItem, ChangePreview, ChangeSet, MarginMethods, MarginNotifications, PropertyChange, Question, RelatedNote, RelatedResult, Report, Review as ScheduledReview } from './protocol.gen';

export type { Answer, ChangeItem, ChangePreview, ChangeSet, Citation, PropertyChange, Question, RelatedNote, RelatedResult, Report } from './protocol.gen';
export type { ScheduledReview };

/**
 * Prompt puts one question to the person: their answer, or undefined when
 * they cancel. why is margin's reason for asking, the same for every
 * question of a clarification, since the Ask modal redraws per question and
 * keeps it above each.
 */
export type Prompt = (q: Question, why: string) => Promise<string | undefined>;

/**
 * notFound is what the answer view says margin could not find: a partial
 * answer's gaps under a heading, or null when it names none.
 */
export function notFound(a: Answer): { heading: string; gaps: string[] } | null {
  return a.gaps?.length ? { heading: 'Not found in your notes', gaps: a.gaps } : null;
}

export interface PendingChange {
  set: ChangeSet;
  item: ChangeItem;
}

/** Server → plugin notifications the plugin redraws on. */
export const changeNotifications: (keyof MarginNotifications)[] = ['margin/changeSetCreated', 'margin/changeApplied'];

/** propertyLine is one frontmatter change as Obsidian's properties read: "status: open → in-progress". */
export function propertyLine(p: PropertyChange): string {
  switch (p.change) {
    case 'added':
      return `${p.key}: ${p.after ?? ''} (added)`;
    case 'removed':
      return `${p.key}: ${p.before ?? ''} (removed)`;
  }
  return `${p.key}: ${p.before ?? ''} → ${p.after ?? ''}`;
}

/**
 * A row of a side-by-side diff: a line both versions share, a line only
 * the note as it is has (removed), one only the note after has (added),
 * or one replaced by another (changed), left against right.
 */
export interface DiffRow {
  kind: 'same' | 'removed' | 'added' | 'changed';
  left?: string;
  right?: string;
}

/**
 * sideBySide lines up two versions of a note for two columns. The lines
 * both share at the start and the end are matched first, so an item's
 * change to a long note costs a longest-common-subsequence of the few
 * lines between; a run of removed lines next to a run of added ones pairs
 * up into changed rows.
 */
export function sideBySide(before: string, after: string): DiffRow[] {
  const split = (s: string) => (s === '' ? [] : s.replace(/\n$/, '').split('\n'));
  const a = split(before);
  const b = split(after);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) {
    pre++;
  }
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) {
    suf++;
  }
  const x = a.slice(pre, a.length - suf);
  const y = b.slice(pre, b.length - suf);
  // lcs[i][j]: the longest common subsequence of x[i:] and y[j:].
  const lcs = Array.from({ length: x.length + 1 }, () => new Array<number>(y.length + 1).fill(0));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const rows: DiffRow[] = a.slice(0, pre).map((l) => ({ kind: 'same', left: l, right: l }));
  let removed: string[] = [];
  let added: string[] = [];
  const flush = () => {
    for (let k = 0; k < Math.max(removed.length, added.length); k++) {
      const left = removed[k];
      const right = added[k];
      rows.push(left !== undefined && right !== undefined ? { kind: 'changed', left, right } : left !== undefined ? { kind: 'removed', left } : { kind: 'added', right });
    }
    removed = [];
    added = [];
  };
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      flush();
      rows.push({ kind: 'same', left: x[i], right: y[j] });
      i++;
      j++;
    } else if (j >= y.length || (i < x.length && lcs[i + 1][j] >= lcs[i][j + 1])) {
      removed.push(x[i++]);
    } else {
      added.push(y[j++]);
    }
  }
  flush();
  return rows.concat(a.slice(a.length - suf).map((l) => ({ kind: 'same', left: l, right: l })));
}

/** What the review view shows of an item: its diff and property changes, or why it is stale instead. */
export type Review = { stale: string } | { properties: string[]; rows: DiffRow[]; note?: string };

export function review(p: ChangePreview): Review {
  if (p.stale) {
    return { stale: `"${p.summary}" no longer applies to ${p.path}: ${p.reason ?? 'the note changed'}` };
  }
  return { properties: (p.properties ?? []).map(propertyLine), rows: sideBySide(p.before, p.after ?? ''), note: p.reason };
}

/** RelatedRow is one line of the Related notes view: the note's name, and where clicking it opens (its nearest section). */
export interface RelatedRow {
  name: string;
  path: string;
  line: number;
  heading: string;
}

/** relatedView is what the Related notes view shows: a row per note, or why there are none. */
export function relatedView(r: RelatedResult): { rows: RelatedRow[]; empty?: string } {
  const rows = (r.notes ?? []).map((n: RelatedNote) => ({ name: n.path.replace(/^.*\//, '').replace(/\.md$/, ''), path: n.path, line: n.line, heading: n.heading }));
  return rows.length ? { rows } : { rows, empty: r.reason ? `No related notes: ${r.reason}.` : 'No related notes.' };
}

export class Margin {
  private constructor(
    private readonly proc: ChildProcess,
    private readonly conn: MessageConnection,
  ) {}

  /** start runs `bin serve` on the vault and initializes it. */
  static async start(bin: string, vault: string, env: NodeJS.ProcessEnv = process.env): Promise<Margin> {
    const proc = spawn(bin, ['serve'], { env, stdio: ['pipe', 'pipe', 'inherit'] });
    const conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
    // Obsidian does not tell margin which notes are open, so margin writes
    // files itself and never needs an editor's edit; refuse any, honestly.
    conn.onRequest('workspace/applyEdit', () => ({ applied: false, failureReason: 'the Obsidian plugin does not edit notes' }));
    conn.onRequest('workspace/configuration', (p: { items: unknown[] }) => p.items.map(() => null));
    conn.listen();
    const spawned = new Promise<never>((_, fail) => proc.once('error', fail));
    const uri = pathToFileURL(vault).href;
    await Promise.race([
      spawned,
      conn.sendRequest('initialize', { processId: process.pid, clientInfo: { name: 'Obsidian' }, rootUri: uri, capabilities: {}, initializationOptions: { vault } }),
    ]);
    conn.sendNotification('initialized', {});
    return new Margin(proc, conn);
  }

  /** request sends one of margin's methods with params and result as the server declares them. */
  private request<M extends keyof MarginMethods>(method: M, params: MarginMethods[M]['params']): Promise<MarginMethods[M]['result']> {
    return this.conn.sendRequest<MarginMethods[M]['result']>(method, params);
  }

  /** onNotification handles one of margin's notifications, with its params as the server declares them. */
  onNotification<N extends keyof MarginNotifications>(method: N, handle: (params: MarginNotifications[N]) => void): void {
    this.conn.onNotification(method, handle);
  }

  /** report is the report of a task note (vault-relative path), or null when it has none. */
  async report(task: string): Promise<Report | null> {
    return this.request('reports/get', { task }).catch(() => null);
  }

  /** related are the notes nearest by meaning to the note at path that it neither links to nor is linked from. */
  related(path: string, limit?: number): Promise<RelatedResult> {
    return this.request('vault/related', { path, limit });
  }

  /** latestReview is the note of the latest run of the scheduled review name. */
  latestReview(name: string): Promise<ScheduledReview> {
    return this.request('reviews/latest', { name });
  }

  /** pendingChanges are the items still waiting for a decision, newest change set first. */
  async pendingChanges(): Promise<PendingChange[]> {
    const res = await this.request('changes/list', {});
    return (res.changeSets ?? []).flatMap((set) =>
      (set.items ?? []).filter((item) => item.status === 'pending' || item.status === 'deferred').map((item) => ({ set, item })),
    );
  }

  /** decide applies or rejects one item; it returns the item as decided (stale when its target changed). */
  decide(p: PendingChange, verdict: 'confirmed' | 'rejected'): Promise<ChangeItem> {
    return this.decideItem(p.set.id, p.item.id, verdict);
  }

  /** preview is the note an open item changes, as it is and as applying that item alone would leave it. */
  preview(set: string, item: string): Promise<ChangePreview> {
    return this.request('changes/preview', { id: set, item });
  }

  /** decideItem applies or rejects one item by its set and id; it returns the item as decided. */
  async decideItem(set: string, item: string, verdict: 'confirmed' | 'rejected', reason?: string): Promise<ChangeItem> {
    const cs = await this.request('changes/decide', { id: set, decisions: [{ item, verdict, reason }] });
    const it = cs.items?.find((i) => i.id === item);
    if (!it) {
      throw new Error(`margin: no item ${item} in change set ${set}`);
    }
    return it;
  }

  ask(text: string): Promise<Answer> {
    return this.request('query/ask', { text });
  }

  /**
   * clarify settles an answer that needs clarification: it puts its
   * questions to the person one after another, with margin's explanation
   * (the answer text) so they know why they are asked, and replies with
   * what they said, until margin answers; a cancelled prompt declines the
   * rest, and margin answers with what it has.
   */
  async clarify(a: Answer, prompt: Prompt): Promise<Answer> {
    while (a.status === 'needs_clarification' && a.questions?.length) {
      const answers: Record<string, string> = {};
      let decline = false;
      for (const q of a.questions) {
        const text = await prompt(q, a.answer);
        if (text === undefined) {
          decline = true;
          break;
        }
        answers[q.id] = text;
      }
      a = await this.request('query/reply', { sessionId: a.sessionId, answers: decline ? {} : answers, decline });
    }
    return a;
  }

  /** stop ends the server as LSP asks: shutdown, then exit. */
  async stop(): Promise<void> {
    const exited = new Promise((ok) => (this.proc.exitCode !== null ? ok(null) : this.proc.once('exit', ok)));
    await this.conn.sendRequest('shutdown').catch(() => undefined);
    this.conn.sendNotification('exit');
    await exited;
    this.conn.dispose();
  }
}
