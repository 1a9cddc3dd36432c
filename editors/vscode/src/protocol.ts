// What the extension says to margin serve, apart from VS Code: the tests
// drive the real server with these same functions over vscode-jsonrpc.
// margin's types come from protocol.gen.ts, which go generate writes from
// the server's Go package server/protocol.
import type { Answer, ChangeItem, ChangePreview, ChangeSet, MarginMethods, PropertyChange, Question, Review } from './protocol.gen';

export type { Answer, ChangeItem, ChangePreview, ChangeSet, Citation, PropertyChange, Question, Review, ShowRelatedResult, StatusResult } from './protocol.gen';

/** The server's arguments after the binary (setting margin.path). */
export const serverArgs = ['serve'];

/**
 * The language client's options for a vault (the workspace folder): the
 * markdown files inside it, and the vault for initialize.
 */
export function clientOptions(vault: string) {
  return {
    documentSelector: [{ scheme: 'file', language: 'markdown', pattern: `${vault}/**/*.md` }],
    initializationOptions: { vault },
  };
}

/** A connection to margin: LanguageClient in VS Code, a MessageConnection in tests. */
export interface Requester {
  sendRequest<R>(method: string, params: unknown): Promise<R>;
}

/** request sends one of margin's methods with params and result as the server declares them. */
export function request<M extends keyof MarginMethods>(c: Requester, method: M, params: MarginMethods[M]['params']): Promise<MarginMethods[M]['result']> {
  return c.sendRequest<MarginMethods[M]['result']>(method, params);
}

/** latestReview is the note of the latest run of the scheduled review name. */
export function latestReview(c: Requester, name: string): Promise<Review> {
  return request(c, 'reviews/latest', { name });
}

/**
 * Prompt puts one question to the person: their answer, or undefined when
 * they cancel. why is margin's reason for asking, given with the first
 * question of a clarification and '' with the rest.
 */
export type Prompt = (q: Question, why: string) => Promise<string | undefined>;

/** One open item of a change set, as a list in the editor shows it. */
export interface PendingChange {
  set: ChangeSet;
  item: ChangeItem;
}

export type Verdict = 'confirmed' | 'rejected';

export function executeCommand<R>(c: Requester, command: string, args: unknown[]): Promise<R> {
  return c.sendRequest<R>('workspace/executeCommand', { command, arguments: args });
}

export function ask(c: Requester, text: string): Promise<Answer> {
  return executeCommand<Answer>(c, 'margin.ask', [text]);
}

/**
 * clarify settles an answer that needs clarification: it puts its questions
 * to the person one after another, the first with margin's explanation (the
 * answer text) so they know why they are asked, and sends query/reply with
 * what they said, until margin answers; a cancelled prompt declines the
 * rest, and margin answers with what it has.
 */
export async function clarify(c: Requester, a: Answer, prompt: Prompt): Promise<Answer> {
  while (a.status === 'needs_clarification' && a.questions?.length) {
    const answers: Record<string, string> = {};
    let decline = false;
    for (const [i, q] of a.questions.entries()) {
      const text = await prompt(q, i === 0 ? a.answer : '');
      if (text === undefined) {
        decline = true;
        break;
      }
      answers[q.id] = text;
    }
    a = await request(c, 'query/reply', { sessionId: a.sessionId, answers: decline ? {} : answers, decline });
  }
  return a;
}

const open = new Set(['pending', 'deferred']);

/** The items still waiting for a decision, newest change set first. */
export async function pendingChanges(c: Requester): Promise<PendingChange[]> {
  const res = await request(c, 'changes/list', {});
  return (res.changeSets ?? []).flatMap((set) => (set.items ?? []).filter((item) => open.has(item.status)).map((item) => ({ set, item })));
}

/** decide confirms or rejects one item and returns the change set after applying. */
export function decide(c: Requester, p: PendingChange, verdict: Verdict, reason?: string): Promise<ChangeSet> {
  return decideItem(c, p.set.id, p.item.id, verdict, reason);
}

export function decideItem(c: Requester, set: string, item: string, verdict: Verdict, reason?: string): Promise<ChangeSet> {
  return request(c, 'changes/decide', { id: set, decisions: [{ item, verdict, reason }] });
}

/** The item's outcome in words, e.g. "confirmed" or "stale (the estimate changed since)". */
export function outcome(set: ChangeSet, item: string): string {
  const it = set.items?.find((i) => i.id === item);
  return it ? it.status + (it.detail ? ` (${it.detail})` : '') : 'unknown';
}

/** preview asks margin for the note an open item changes, as it is and as applying that item alone would leave it. */
export function preview(c: Requester, set: string, item: string): Promise<ChangePreview> {
  return request(c, 'changes/preview', { id: set, item });
}

/** propertyLine is one frontmatter change as a person reads a property: "status: open → in-progress". */
export function propertyLine(p: PropertyChange): string {
  switch (p.change) {
    case 'added':
      return `${p.key}: ${p.after ?? ''} (added)`;
    case 'removed':
      return `${p.key}: ${p.before ?? ''} (removed)`;
  }
  return `${p.key}: ${p.before ?? ''} → ${p.after ?? ''}`;
}

/** The scheme of the two virtual documents of a diff review. */
export const previewScheme = 'margin-preview';

export type Side = 'before' | 'after';

/** Where one side of an item's diff lives: the note's path, and the set, item and side in the query. */
export interface PreviewAddress {
  path: string;
  query: string;
}

/** What the diff editor of an item shows: its two sides and a title naming the change and its properties. */
export interface DiffView {
  before: PreviewAddress;
  after: PreviewAddress;
  title: string;
}

export function previewAddress(p: ChangePreview, side: Side): PreviewAddress {
  return { path: '/' + p.path, query: new URLSearchParams({ set: p.id, item: p.item, side }).toString() };
}

/** parsePreviewQuery reads the set, item and side back from a preview document's query. */
export function parsePreviewQuery(query: string): { set: string; item: string; side: Side } | undefined {
  const q = new URLSearchParams(query);
  const set = q.get('set');
  const item = q.get('item');
  const side = q.get('side');
  if (!set || !item || (side !== 'before' && side !== 'after')) {
    return undefined;
  }
  return { set, item, side };
}

/**
 * Reviews keeps the previews a diff review shows, one per item, so the two
 * virtual documents of each diff and the Apply and Reject of its editor
 * title find theirs: several items can be open side by side and each is
 * taken or left on its own.
 */
export class Reviews {
  private readonly previews = new Map<string, ChangePreview>();

  constructor(private readonly c: Requester) {}

  private static key(set: string, item: string): string {
    return `${set}/${item}`;
  }

  /**
   * open previews an item: the diff to show, or, for a stale item (the note
   * moved on; applying would not apply it), the message to show instead.
   */
  async open(set: string, item: string): Promise<{ diff: DiffView } | { stale: string }> {
    return this.show(await preview(this.c, set, item));
  }

  /** show is open for a preview margin gave already (the Diff lens's margin.preview). */
  show(p: ChangePreview): { diff: DiffView } | { stale: string } {
    if (p.stale) {
      this.previews.delete(Reviews.key(p.id, p.item));
      return { stale: `margin: "${p.summary}" no longer applies to ${p.path}: ${p.reason ?? 'the note changed'}` };
    }
    this.previews.set(Reviews.key(p.id, p.item), p);
    const name = p.path.split('/').pop()!.replace(/\.md$/, '');
    const props = (p.properties ?? []).map(propertyLine);
    const title = `${name}: ${p.summary}${props.length ? ` — ${props.join('; ')}` : ''}${p.reason ? ` (${p.reason})` : ''}`;
    return { diff: { before: previewAddress(p, 'before'), after: previewAddress(p, 'after'), title } };
  }

  /** content is the text of a preview document, '' for one no longer reviewed. */
  content(query: string): string {
    const q = parsePreviewQuery(query);
    const p = q && this.previews.get(Reviews.key(q.set, q.item));
    if (!p || !q) {
      return '';
    }
    return q.side === 'before' ? p.before : (p.after ?? '');
  }

  /** decide applies or rejects the item a preview document shows, ends its review and says how it went. */
  async decide(query: string, verdict: Verdict, reason?: string): Promise<string> {
    const q = parsePreviewQuery(query);
    const p = q && this.previews.get(Reviews.key(q.set, q.item));
    if (!p || !q) {
      return 'margin: this diff is no longer under review';
    }
    const set = await decideItem(this.c, q.set, q.item, verdict, reason);
    this.previews.delete(Reviews.key(q.set, q.item));
    return `margin: ${p.summary}: ${outcome(set, q.item)}`;
  }
}

/**
 * answerMarkdown renders an answer as a markdown document with what margin
 * could not find, and citations that link to the cited line (file URI with
 * #L, which VS Code opens there).
 */
export function answerMarkdown(question: string, a: Answer, vaultUri: string): string {
  const out = [`# ${question}`, '', a.answer, ''];
  for (const q of a.questions ?? []) {
    out.push(`- ${q.question}${q.options?.length ? ` (${q.options.join(' / ')})` : ''}`);
  }
  if (a.gaps?.length) {
    out.push('## Not found in your notes', '', ...a.gaps.map((g) => `- ${g}`), '');
  }
  if (a.citations?.length) {
    out.push('## Sources', '');
    for (const c of a.citations) {
      const uri = `${vaultUri}/${c.path.split('/').map(encodeURIComponent).join('/')}#L${c.line}`;
      out.push(`- [${c.path}${c.heading ? ' › ' + c.heading : ''}](${uri})`);
    }
    out.push('');
  }
  out.push(`_${answerFooter(a)}_`);
  return out.join('\n');
}

/**
 * answerFooter is an answer's status, and why its notes were found by
 * keyword only when margin could not search them by meaning too.
 */
export function answerFooter(a: Answer): string {
  return a.keywordOnly ? `${a.status} · searched by keyword: ${a.keywordOnly}` : a.status;
}
