// The initialize params VS Code sends for the extension, built by
// vscode-languageclient itself: loaded with a stand-in for the vscode module
// (which only VS Code provides), a LanguageClient with the extension's
// options hands them to a connection that keeps them.
import Module from 'node:module';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { LanguageClientOptions } from 'vscode-languageclient/node';
import * as margin from '../src/protocol';

// A stub is callable and constructible, and every property it was not
// given is another stub: what the client touches while it starts.
const stubs: ProxyHandler<object> = {
  get: (target, key) => (key in target ? Reflect.get(target, key) : key === 'then' ? undefined : stub()),
  apply: () => stub(),
  construct: () => stub(),
};

function stub(fields: object = {}): object {
  return new Proxy(Object.assign(function () {}, fields), stubs); // a function, so classes can extend it
}

function fileUri(path: string) {
  return { scheme: 'file', fsPath: path, toString: () => pathToFileURL(path).href };
}

const vscode = stub({
  version: '1.91.0',
  env: { appName: 'Visual Studio Code', language: 'en' },
  Uri: { file: fileUri },
});

type Load = (request: string, ...rest: unknown[]) => unknown;

export async function initializeParams(vault: string): Promise<object> {
  const loader = Module as unknown as { _load: Load };
  const load = loader._load;
  loader._load = (request, ...rest) => (request === 'vscode' ? vscode : load(request, ...rest));
  try {
    const { LanguageClient } = require('vscode-languageclient/node') as typeof import('vscode-languageclient/node');
    const options = { ...margin.clientOptions(vault), workspaceFolder: { uri: fileUri(vault), name: basename(vault), index: 0 } };
    const client = new LanguageClient('margin', 'margin', { command: 'margin', args: margin.serverArgs }, options as unknown as LanguageClientOptions);
    return await new Promise((keep) => {
      // initialize's answer never comes: the client stops there, params sent.
      const connection = stub({ initialize: (params: object) => (keep(params), new Promise(() => undefined)) });
      (client as unknown as { initialize(c: object): Promise<unknown> }).initialize(connection);
    });
  } finally {
    loader._load = load;
  }
}
