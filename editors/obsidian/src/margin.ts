// margin serve and what the plugin asks of it, without Obsidian: the Node
// test drives the real server through this module.
import { ChildProcess, spawn } from 'child_process';
import { pathToFileURL } from 'url';
import { MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
// margin's types come from protocol.gen.ts, which go generate writes from
// the server's Go package server/protocol.
import type { Answer, ChangeItem, ChangeSet, MarginMethods, MarginNotifications, Question, Report } from './protocol.gen';

export type { Answer, ChangeItem, ChangeSet, Citation, Question, Report } from './protocol.gen';

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

  /** pendingChanges are the items still waiting for a decision, newest change set first. */
  async pendingChanges(): Promise<PendingChange[]> {
    const res = await this.request('changes/list', {});
    return (res.changeSets ?? []).flatMap((set) =>
      (set.items ?? []).filter((item) => item.status === 'pending' || item.status === 'deferred').map((item) => ({ set, item })),
    );
  }

  /** decide applies or rejects one item; it returns the item as decided (stale when its target changed). */
  async decide(p: PendingChange, verdict: 'confirmed' | 'rejected'): Promise<ChangeItem> {
    const set = await this.request('changes/decide', { id: p.set.id, decisions: [{ item: p.item.id, verdict }] });
    return set.items?.find((i) => i.id === p.item.id) ?? p.item;
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
