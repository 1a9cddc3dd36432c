// The margin plugin: runs margin serve for this vault, shows the open task's
// TLDR in the status bar, lists pending changes with Apply/Reject, and asks.
import { App, FileSystemAdapter, ItemView, Modal, Notice, Plugin, PluginSettingTab, Setting, TFile, ViewStateResult, WorkspaceLeaf } from 'obsidian';
import { Answer, Margin, Question, changeNotifications, notFound, relatedView, review } from './margin';

const CHANGES_VIEW = 'margin-changes';
const REVIEW_VIEW = 'margin-review';
const RELATED_VIEW = 'margin-related';

interface Settings {
  path: string;
}

export default class MarginPlugin extends Plugin {
  settings: Settings = { path: 'margin' };
  margin: Margin | null = null;
  private status!: HTMLElement;

  async onload(): Promise<void> {
    this.settings = Object.assign(this.settings, await this.loadData());
    this.addSettingTab(new MarginSettings(this.app, this));
    this.status = this.addStatusBarItem();
    this.registerView(CHANGES_VIEW, (leaf) => new ChangesView(leaf, this));
    this.registerView(REVIEW_VIEW, (leaf) => new ReviewView(leaf, this));
    this.registerView(RELATED_VIEW, (leaf) => new RelatedView(leaf, this));
    this.addCommand({ id: 'ask', name: 'Ask', callback: () => new AskModal(this.app, this).open() });
    this.addCommand({ id: 'changes', name: 'Show pending changes', callback: () => this.showChanges() });
    this.addCommand({ id: 'related', name: 'Show related notes', callback: () => this.showRelated() });
    this.addCommand({ id: 'open-review', name: 'Open the latest review', callback: () => new ReviewModal(this.app, this).open() });
    this.registerEvent(this.app.workspace.on('file-open', () => this.showTLDR()));
    this.registerEvent(this.app.workspace.on('active-leaf-change', () => this.refreshRelated()));
    this.app.workspace.onLayoutReady(() => this.startServer());
  }

  async onunload(): Promise<void> {
    await this.margin?.stop();
  }

  async startServer(): Promise<void> {
    const adapter = this.app.vault.adapter;
    if (!(adapter instanceof FileSystemAdapter)) {
      new Notice('margin: needs a vault on disk (desktop)');
      return;
    }
    await this.margin?.stop();
    this.margin = null;
    try {
      this.margin = await Margin.start(this.settings.path, adapter.getBasePath());
    } catch (e) {
      new Notice(`margin: could not start ${this.settings.path}: ${e}`);
      return;
    }
    this.margin.onNotification('margin/reportUpdated', () => this.showTLDR());
    for (const method of changeNotifications) {
      this.margin.onNotification(method, () => this.refreshChanges());
    }
    this.showTLDR();
  }

  async showTLDR(): Promise<void> {
    const file = this.app.workspace.getActiveFile();
    const report = file && this.margin ? await this.margin.report(file.path) : null;
    this.status.setText(report?.tldr ? `TLDR: ${report.tldr}` : '');
  }

  async showChanges(): Promise<void> {
    let leaf = this.app.workspace.getLeavesOfType(CHANGES_VIEW)[0];
    if (!leaf) {
      leaf = this.app.workspace.getRightLeaf(false)!;
      await leaf.setViewState({ type: CHANGES_VIEW, active: true });
    }
    this.app.workspace.revealLeaf(leaf);
  }

  async showRelated(): Promise<void> {
    let leaf = this.app.workspace.getLeavesOfType(RELATED_VIEW)[0];
    if (!leaf) {
      leaf = this.app.workspace.getRightLeaf(false)!;
      await leaf.setViewState({ type: RELATED_VIEW, active: false });
    }
    this.app.workspace.revealLeaf(leaf);
  }

  refreshRelated(): void {
    for (const leaf of this.app.workspace.getLeavesOfType(RELATED_VIEW)) {
      (leaf.view as RelatedView).refresh();
    }
  }

  refreshChanges(): void {
    for (const leaf of this.app.workspace.getLeavesOfType(CHANGES_VIEW)) {
      (leaf.view as ChangesView).refresh();
    }
  }

  /** review opens an item's diff in a tab of its own: one tab per item, each taken or left alone. */
  async review(set: string, item: string): Promise<void> {
    const leaf = this.app.workspace.getLeaf('tab');
    await leaf.setViewState({ type: REVIEW_VIEW, active: true, state: { set, item } });
    this.app.workspace.revealLeaf(leaf);
  }

  open(path: string, line?: number): void {
    const file = this.app.vault.getAbstractFileByPath(path);
    if (file instanceof TFile) {
      this.app.workspace.getLeaf(false).openFile(file, line ? { eState: { line: line - 1 } } : {});
    }
  }
}

class ChangesView extends ItemView {
  constructor(
    leaf: WorkspaceLeaf,
    private readonly plugin: MarginPlugin,
  ) {
    super(leaf);
  }

  getViewType(): string {
    return CHANGES_VIEW;
  }

  getDisplayText(): string {
    return 'Pending changes';
  }

  getIcon(): string {
    return 'list-checks';
  }

  async onOpen(): Promise<void> {
    await this.refresh();
  }

  async refresh(): Promise<void> {
    const margin = this.plugin.margin;
    const pending = margin ? await margin.pendingChanges() : [];
    const el = this.contentEl;
    el.empty();
    el.createEl('h4', { text: 'Pending changes' });
    if (!margin) {
      el.createEl('p', { text: 'margin is not running.' });
      return;
    }
    if (pending.length === 0) {
      el.createEl('p', { text: 'Nothing to decide.' });
    }
    for (const p of pending) {
      const row = el.createDiv({ cls: 'margin-change' });
      row.createEl('a', { text: p.set.task.replace(/\.md$/, '') }).onclick = () => this.plugin.open(p.set.task);
      row.createEl('p', { text: p.item.summary });
      row.createEl('button', { text: 'Diff' }).onclick = () => this.plugin.review(p.set.id, p.item.id);
      for (const [label, verdict] of [['Apply', 'confirmed'], ['Reject', 'rejected']] as const) {
        row.createEl('button', { text: label }).onclick = async () => {
          const item = await margin.decide(p, verdict);
          new Notice(`margin: ${p.item.summary}: ${item.status}${item.detail ? ` (${item.detail})` : ''}`);
          await this.refresh();
        };
      }
    }
  }
}

// RelatedView lists the notes related to the active note, nearest first;
// a click opens one at its nearest section. It follows the active note,
// and keeps the last one while the view itself or a non-note is active.
class RelatedView extends ItemView {
  private path = '';

  constructor(
    leaf: WorkspaceLeaf,
    private readonly plugin: MarginPlugin,
  ) {
    super(leaf);
  }

  getViewType(): string {
    return RELATED_VIEW;
  }

  getDisplayText(): string {
    return 'Related notes';
  }

  getIcon(): string {
    return 'network';
  }

  async onOpen(): Promise<void> {
    await this.refresh();
  }

  async refresh(): Promise<void> {
    const file = this.app.workspace.getActiveFile();
    if (file?.extension === 'md') {
      this.path = file.path;
    }
    const margin = this.plugin.margin;
    const path = this.path;
    const el = this.contentEl;
    if (!margin || !path) {
      el.empty();
      el.createEl('h4', { text: 'Related notes' });
      el.createEl('p', { text: margin ? 'Open a note.' : 'margin is not running.' });
      return;
    }
    const shown = await margin.related(path).then(relatedView, (e) => ({ rows: [], empty: `${e.message ?? e}` }));
    if (path !== this.path) {
      return; // another note became active meanwhile
    }
    el.empty();
    el.createEl('h4', { text: `Related to ${path.replace(/\.md$/, '')}` });
    if (shown.empty) {
      el.createEl('p', { text: shown.empty });
    }
    const list = el.createEl('ul');
    for (const r of shown.rows) {
      const item = list.createEl('li');
      item.createEl('a', { text: r.name }).onclick = () => this.plugin.open(r.path, r.line);
      if (r.heading) {
        item.createSpan({ text: ` › ${r.heading}`, cls: 'margin-related-heading' });
      }
    }
  }
}

// ReviewView shows one change item as the note as it is beside the note
// as applying it would leave it, its frontmatter changes as properties
// above, with Apply and Reject; a stale item says so instead.
class ReviewView extends ItemView {
  private set = '';
  private item = '';

  constructor(
    leaf: WorkspaceLeaf,
    private readonly plugin: MarginPlugin,
  ) {
    super(leaf);
  }

  getViewType(): string {
    return REVIEW_VIEW;
  }

  getDisplayText(): string {
    return this.item ? `Review ${this.item}` : 'Review a change';
  }

  getIcon(): string {
    return 'diff';
  }

  getState(): Record<string, unknown> {
    return { set: this.set, item: this.item };
  }

  async setState(state: { set?: string; item?: string }, result: ViewStateResult): Promise<void> {
    this.set = state.set ?? '';
    this.item = state.item ?? '';
    await super.setState(state, result);
    await this.render();
  }

  private async render(): Promise<void> {
    const el = this.contentEl;
    el.empty();
    const margin = this.plugin.margin;
    if (!margin || !this.set) {
      el.createEl('p', { text: 'margin is not running.' });
      return;
    }
    let p;
    try {
      p = await margin.preview(this.set, this.item);
    } catch (e) {
      el.createEl('p', { text: `margin: ${e instanceof Error ? e.message : e}` });
      return;
    }
    el.createEl('h4', { text: p.summary });
    el.createEl('small', { text: p.path });
    const r = review(p);
    if ('stale' in r) {
      el.createEl('p', { text: r.stale, cls: 'mod-warning' });
      return;
    }
    if (r.note) {
      el.createEl('p', { text: r.note });
    }
    if (r.properties.length) {
      const props = el.createEl('ul', { cls: 'margin-properties' });
      for (const line of r.properties) {
        props.createEl('li', { text: line });
      }
    }
    const buttons = el.createDiv();
    const reason = buttons.createEl('input', { type: 'text', placeholder: 'Why not? (optional, with Reject)' });
    for (const [label, verdict] of [['Apply', 'confirmed'], ['Reject', 'rejected']] as const) {
      buttons.createEl('button', { text: label, cls: verdict === 'confirmed' ? 'mod-cta' : '' }).onclick = async () => {
        const it = await margin.decideItem(this.set, this.item, verdict, verdict === 'rejected' ? reason.value.trim() || undefined : undefined);
        new Notice(`margin: ${it.summary}: ${it.status}${it.detail ? ` (${it.detail})` : ''}`);
        this.leaf.detach();
      };
    }
    const table = el.createEl('table', { cls: 'margin-diff' });
    table.style.fontFamily = 'var(--font-monospace)';
    table.style.width = '100%';
    const head = table.createEl('tr');
    head.createEl('th', { text: p.exists ? 'As it is' : '(a new note)' });
    head.createEl('th', { text: 'After this change' });
    const colors = { removed: 'var(--background-modifier-error)', added: 'var(--background-modifier-success)' };
    for (const row of r.rows) {
      const tr = table.createEl('tr');
      const left = tr.createEl('td', { text: row.left ?? '' });
      const right = tr.createEl('td', { text: row.right ?? '' });
      if (row.kind !== 'same' && row.left !== undefined) {
        left.style.background = colors.removed;
      }
      if (row.kind !== 'same' && row.right !== undefined) {
        right.style.background = colors.added;
      }
      left.style.whiteSpace = right.style.whiteSpace = 'pre-wrap';
      left.style.width = right.style.width = '50%';
    }
  }
}

// ReviewModal asks which scheduled review to open (Margin/Reviews/<name>.md
// defines it), "daily" unless the person names another, and opens its latest note.
class ReviewModal extends Modal {
  constructor(
    app: App,
    private readonly plugin: MarginPlugin,
  ) {
    super(app);
  }

  onOpen(): void {
    this.titleEl.setText('Open the latest review');
    const input = this.contentEl.createEl('input', { type: 'text', value: 'daily' });
    input.style.width = '100%';
    input.onkeydown = async (ev) => {
      const margin = this.plugin.margin;
      if (ev.key !== 'Enter' || !input.value.trim() || !margin) {
        return;
      }
      try {
        const r = await margin.latestReview(input.value.trim());
        this.close();
        this.plugin.open(r.path);
      } catch (e) {
        new Notice(`margin: ${e}`);
      }
    };
    input.focus();
  }
}

class AskModal extends Modal {
  // cancel settles the question on screen as declined, when the modal closes.
  private cancel: (() => void) | null = null;

  constructor(
    app: App,
    private readonly plugin: MarginPlugin,
  ) {
    super(app);
  }

  onClose(): void {
    this.cancel?.();
  }

  onOpen(): void {
    this.titleEl.setText('Ask margin');
    const input = this.contentEl.createEl('input', { type: 'text', placeholder: 'Why did my bench feel heavy last week?' });
    input.style.width = '100%';
    const out = this.contentEl.createDiv();
    input.onkeydown = async (ev) => {
      if (ev.key !== 'Enter' || !input.value.trim() || !this.plugin.margin) {
        return;
      }
      const margin = this.plugin.margin;
      out.setText('…');
      try {
        const asked = await margin.ask(input.value.trim());
        this.show(out, await margin.clarify(asked, (q, why) => this.prompt(out, q, why)));
      } catch (e) {
        out.setText(`margin: ${e}`);
      }
    };
    input.focus();
  }

  // prompt shows one question of a clarification under margin's reason for
  // asking: a button per option, or a text field; Decline (or closing the
  // modal) declines.
  private prompt(out: HTMLElement, q: Question, why: string): Promise<string | undefined> {
    out.empty();
    if (why) {
      out.createEl('p').createEl('em', { text: why });
    }
    out.createEl('p', { text: q.question });
    return new Promise((settle) => {
      const done = (answer: string | undefined) => {
        this.cancel = null;
        out.setText('…');
        settle(answer);
      };
      this.cancel = () => done(undefined);
      const row = out.createDiv();
      if (q.options?.length) {
        for (const o of q.options) {
          row.createEl('button', { text: o }).onclick = () => done(o);
        }
      } else {
        const field = row.createEl('input', { type: 'text' });
        field.style.width = '100%';
        field.onkeydown = (ev) => {
          if (ev.key === 'Enter' && field.value.trim()) {
            done(field.value.trim());
          }
        };
        field.focus();
      }
      row.createEl('button', { text: 'Decline' }).onclick = () => done(undefined);
    });
  }

  // show writes the answer, what margin could not find, and its citations,
  // each a link to the cited line.
  private show(out: HTMLElement, a: Answer): void {
    out.empty();
    out.createEl('p', { text: a.answer });
    const missing = notFound(a);
    if (missing) {
      out.createEl('p', { text: missing.heading });
      const gaps = out.createEl('ul');
      for (const g of missing.gaps) {
        gaps.createEl('li', { text: g });
      }
    }
    for (const q of a.questions ?? []) {
      out.createEl('p', { text: `${q.question} ${q.options?.join(' / ') ?? ''}` });
    }
    const list = out.createEl('ul');
    for (const c of a.citations ?? []) {
      list.createEl('li').createEl('a', { text: `${c.path}${c.heading ? ' › ' + c.heading : ''}` }).onclick = () => {
        this.plugin.open(c.path, c.line);
        this.close();
      };
    }
    out.createEl('small', { text: a.keywordOnly ? `${a.status} · searched by keyword: ${a.keywordOnly}` : a.status });
  }
}

class MarginSettings extends PluginSettingTab {
  constructor(
    app: App,
    private readonly plugin: MarginPlugin,
  ) {
    super(app, plugin);
  }

  display(): void {
    this.containerEl.empty();
    new Setting(this.containerEl)
      .setName('margin binary')
      .setDesc('A name on PATH or an absolute path; margin restarts when it changes.')
      .addText((t) =>
        t.setValue(this.plugin.settings.path).onChange(async (v) => {
          this.plugin.settings.path = v.trim() || 'margin';
          await this.plugin.saveData(this.plugin.settings);
          await this.plugin.startServer();
        }),
      );
  }
}
