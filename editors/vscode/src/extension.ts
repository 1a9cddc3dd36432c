// The margin extension: margin serve for the first workspace folder (the
// vault), with its code lenses and commands, plus Ask and Changes.
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import * as margin from './protocol';

let client: LanguageClient | undefined;
let reviews: margin.Reviews;
// previewChanged makes VS Code read a preview document again when the item
// is reviewed again: it keeps the text of an open virtual document.
const previewChanged = new vscode.EventEmitter<vscode.Uri>();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder || folder.uri.scheme !== 'file') {
    return; // margin serves a vault on disk
  }
  const vault = folder.uri.fsPath;
  const bin = vscode.workspace.getConfiguration('margin').get<string>('path', 'margin');
  const serverOptions: ServerOptions = { command: bin, args: margin.serverArgs };
  const clientOptions: LanguageClientOptions = {
    ...margin.clientOptions(vault),
    workspaceFolder: folder,
    middleware: {
      // margin.ask is the server's command, which the client registers; run
      // from the palette it has no question yet, so ask for one first.
      executeCommand: async (command, args, next) => {
        if (command === 'margin.preview') {
          // The Diff lens: margin gives the preview, the diff editor shows it.
          const p = (await next(command, args)) as margin.ChangePreview | undefined;
          return p && showReview(reviews.show(p));
        }
        if (command !== 'margin.ask') {
          return next(command, args);
        }
        const text = typeof args[0] === 'string' ? args[0] : await vscode.window.showInputBox({ prompt: 'Ask margin' });
        if (!text) {
          return undefined;
        }
        const answer = await margin.clarify(client!, await margin.ask(client!, text), promptQuestion);
        const doc = await vscode.workspace.openTextDocument({
          language: 'markdown',
          content: margin.answerMarkdown(text, answer, folder.uri.toString()),
        });
        await vscode.window.showTextDocument(doc, { preview: true });
        return answer;
      },
    },
  };
  client = new LanguageClient('margin', 'margin', serverOptions, clientOptions);
  reviews = new margin.Reviews(client);
  const decideShown = (verdict: margin.Verdict) => async (uri?: vscode.Uri) => {
    uri ??= vscode.window.activeTextEditor?.document.uri;
    if (uri?.scheme !== margin.previewScheme) {
      return;
    }
    const reason = verdict === 'rejected' ? await vscode.window.showInputBox({ prompt: 'Why? (optional)' }) : undefined;
    const said = await reviews.decide(uri.query, verdict, reason || undefined);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    vscode.window.showInformationMessage(said);
  };
  context.subscriptions.push(
    vscode.commands.registerCommand('margin.changes', () => showChanges(client!, vault)),
    vscode.commands.registerCommand('margin.review', () => pickReview(client!)),
    vscode.commands.registerCommand('margin.reviewApply', decideShown('confirmed')),
    vscode.commands.registerCommand('margin.reviewReject', decideShown('rejected')),
    previewChanged,
    vscode.workspace.registerTextDocumentContentProvider(margin.previewScheme, {
      onDidChange: previewChanged.event,
      provideTextDocumentContent: (uri) => reviews.content(uri.query),
    }),
  );
  await client.start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}

// promptQuestion asks one of margin's clarifying questions: a pick of its
// options, or free text when it has none; Escape declines. margin's reason
// for asking, when given, is the title, above the question.
async function promptQuestion(q: margin.Question, why: string): Promise<string | undefined> {
  const title = why ? `margin asks: ${why}` : 'margin asks';
  if (q.options?.length) {
    return vscode.window.showQuickPick(q.options, { title, placeHolder: q.question, ignoreFocusOut: true });
  }
  return vscode.window.showInputBox({ title, prompt: q.question, ignoreFocusOut: true });
}

// showChanges lists the open change items; the one picked is opened in its
// change set file and applied or rejected.
async function showChanges(c: LanguageClient, vault: string): Promise<void> {
  const pending = await margin.pendingChanges(c);
  if (pending.length === 0) {
    vscode.window.showInformationMessage('margin: no pending changes');
    return;
  }
  const picked = await vscode.window.showQuickPick(
    pending.map((p) => ({ label: p.item.summary, description: p.set.task, detail: `${p.set.id} ${p.item.id}`, p })),
    { placeHolder: 'Pending changes' },
  );
  if (!picked) {
    return;
  }
  await vscode.window.showTextDocument(vscode.Uri.file(`${vault}/${picked.p.set.path}`));
  const verdict = await vscode.window.showQuickPick(['Apply', 'Reject'], { placeHolder: picked.p.item.summary });
  if (!verdict) {
    return;
  }
  const reason = verdict === 'Reject' ? await vscode.window.showInputBox({ prompt: 'Why? (optional)' }) : undefined;
  const set = await margin.decide(c, picked.p, verdict === 'Apply' ? 'confirmed' : 'rejected', reason || undefined);
  vscode.window.showInformationMessage(`margin: ${picked.p.item.summary}: ${margin.outcome(set, picked.p.item.id)}`);
}

// showReview opens an item's diff (the note as it is, left, and as applying
// the item would leave it, right), Apply and Reject in its title bar; a
// stale item gets a message instead.
async function showReview(r: { diff: margin.DiffView } | { stale: string }): Promise<void> {
  if ('stale' in r) {
    vscode.window.showWarningMessage(r.stale);
    return;
  }
  const uri = (a: margin.PreviewAddress) => vscode.Uri.from({ scheme: margin.previewScheme, path: a.path, query: a.query });
  const [before, after] = [uri(r.diff.before), uri(r.diff.after)];
  previewChanged.fire(before);
  previewChanged.fire(after);
  await vscode.commands.executeCommand('vscode.diff', before, after, r.diff.title, { preview: false });
}

// pickReview lists the open change items and opens the one picked as a diff.
async function pickReview(c: LanguageClient): Promise<void> {
  const pending = await margin.pendingChanges(c);
  if (pending.length === 0) {
    vscode.window.showInformationMessage('margin: no pending changes');
    return;
  }
  const picked = await vscode.window.showQuickPick(
    pending.map((p) => ({ label: p.item.summary, description: p.set.task, detail: `${p.set.id} ${p.item.id}`, p })),
    { placeHolder: 'Review a change' },
  );
  if (picked) {
    await showReview(await reviews.open(picked.p.set.id, picked.p.item.id));
  }
}
