// The margin extension: margin serve for the first workspace folder (the
// vault), with its code lenses and commands, plus Ask and Changes.
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import * as margin from './protocol';

let client: LanguageClient | undefined;

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
  context.subscriptions.push(vscode.commands.registerCommand('margin.changes', () => showChanges(client!, vault)));
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
