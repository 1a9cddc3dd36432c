// Checks the .vsix that `npm run package` wrote to bin/editors, as VS Code
// would install it: unzipped, it holds only what runs, and its bundle,
// activated headless with a stand-in for the vscode module against the real
// margin binary, registers every command and reads every setting that its
// package.json contributes, and contributes every command it registers
// itself. VS Code is neither on npm (@vscode/test-electron downloads it
// from Microsoft at run time) nor in Debian, so this stands in for its half:
// reading the manifest and activating the extension.
import assert from 'node:assert/strict';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import Module, { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
import * as margin from '../src/protocol';
import { initializeParams } from './languageclient';

const root = resolve(__dirname, '../../../..');
const bin = process.env.MARGIN_BIN ?? join(root, 'bin/margin');
const source = JSON.parse(readFileSync(resolve(__dirname, '../../package.json'), 'utf8'));
const vsix = join(root, 'bin/editors', `${source.name}-${source.version}.vsix`);

interface Manifest {
  version: string;
  main: string;
  activationEvents: string[];
  contributes: {
    commands: { command: string }[];
    configuration: { properties: Record<string, unknown> };
  };
}

let dir: string;
let unpacked: string;
let manifest: Manifest;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'margin-vsix-'));
  unpacked = join(dir, 'vsix');
  execFileSync('unzip', ['-q', vsix, '-d', unpacked]);
  manifest = JSON.parse(readFileSync(join(unpacked, 'extension/package.json'), 'utf8'));
});

after(() => rmSync(dir, { recursive: true, force: true }));

test('the .vsix holds only what runs: the bundle, the manifest, LICENSE and README', () => {
  const entries = execFileSync('unzip', ['-Z1', vsix], { encoding: 'utf8' }).trim().split('\n').sort();
  assert.deepEqual(entries, [
    '[Content_Types].xml',
    'extension.vsixmanifest',
    'extension/LICENSE.txt',
    'extension/dist/extension.js',
    'extension/package.json',
    'extension/readme.md',
  ]);
  assert.equal(manifest.main, './dist/extension.js');
  assert.match(readFileSync(join(unpacked, 'extension/LICENSE.txt'), 'utf8'), /^MIT License/);
  assert.equal(manifest.version, source.version);
});

test('the bundle needs nothing but vscode and Node built-ins', () => {
  const bundle = readFileSync(join(unpacked, 'extension/dist/extension.js'), 'utf8');
  const required = new Set([...bundle.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1]));
  const outside = [...required].filter((r) => r !== 'vscode' && !builtinModules.includes(r.replace(/^node:/, '')));
  assert.deepEqual(outside, [], 'modules the .vsix does not carry');
  assert.ok(required.has('vscode'));
});

test('every activation event is one VS Code knows', () => {
  assert.ok(manifest.activationEvents.length > 0);
  for (const e of manifest.activationEvents) {
    assert.match(e, /^(workspaceContains:.+|onLanguage:.+|onCommand:.+|onStartupFinished|onView:.+)$/, e);
  }
});

// serverCommands asks margin serve, as the extension's client would, which
// commands it runs: the client registers each of them in VS Code.
async function serverCommands(vault: string): Promise<string[]> {
  const server: ChildProcess = spawn(bin, margin.serverArgs, { stdio: ['pipe', 'pipe', 'inherit'] });
  const conn: MessageConnection = createMessageConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  conn.listen();
  try {
    const init = await conn.sendRequest<{ capabilities: { executeCommandProvider: { commands: string[] } } }>('initialize', await initializeParams(vault));
    const exited = new Promise((done) => server.once('exit', done));
    await conn.sendRequest('shutdown');
    await conn.sendNotification('exit');
    await exited;
    return init.capabilities.executeCommandProvider.commands;
  } finally {
    conn.dispose();
    if (server.exitCode === null) {
      server.kill();
    }
  }
}

// A stub is callable and constructible, and every property it was not given
// is another stub: what vscode-languageclient touches while it starts.
const stubs: ProxyHandler<object> = {
  get: (target, key) => (key in target ? Reflect.get(target, key) : key === 'then' ? undefined : stub()),
  apply: () => stub(),
  construct: () => stub(),
};

function stub(fields: object = {}): object {
  return new Proxy(Object.assign(function () {}, fields), stubs);
}

function fileUri(path: string) {
  return stub({ scheme: 'file', fsPath: path, path, toString: () => pathToFileURL(path).href });
}

test('activated headless, the bundle registers what it contributes and contributes what it registers', async () => {
  const marker = manifest.activationEvents.find((e) => e.startsWith('workspaceContains:'))!.slice('workspaceContains:'.length);
  const vault = join(dir, 'vault');
  mkdirSync(join(vault, marker), { recursive: true });

  const registered = new Set<string>();
  const settingsRead = new Set<string>();
  const folder = { uri: fileUri(vault), name: 'vault', index: 0 };
  const vscode = stub({
    version: '1.91.0',
    env: { appName: 'Visual Studio Code', language: 'en' },
    Uri: { file: fileUri },
    // The bundle reads vscode's exports by name when it loads (esbuild's
    // interop copies own properties), so what it constructs then is given.
    EventEmitter: class {
      event = stub();
      fire() {}
      dispose() {}
    },
    commands: stub({
      registerCommand: (id: string) => (registered.add(id), stub()),
    }),
    workspace: stub({
      workspaceFolders: [folder],
      textDocuments: [],
      getWorkspaceFolder: () => folder,
      getConfiguration: (section?: string) =>
        stub({
          get: (key: string, fallback?: unknown) => {
            const name = section ? `${section}.${key}` : key;
            settingsRead.add(name);
            return name === 'margin.path' ? bin : fallback;
          },
        }),
    }),
    window: stub({ visibleTextEditors: [], tabGroups: stub({ all: [] }) }),
  });

  const loader = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = loader._load;
  loader._load = (request, ...rest) => (request === 'vscode' ? vscode : load(request, ...rest));
  let extension: { activate(c: object): Promise<void>; deactivate(): Promise<void> };
  try {
    extension = require(join(unpacked, 'extension', manifest.main));
  } finally {
    loader._load = load;
  }
  await extension.activate({ subscriptions: [] });
  try {
    const served = await serverCommands(vault);
    for (const c of served) {
      assert.ok(registered.has(c), `${c}, which margin serve runs, is not registered: the client did not start`);
    }
    const contributed = manifest.contributes.commands.map((c) => c.command);
    for (const c of contributed) {
      assert.ok(registered.has(c), `${c} is contributed but nothing registers it`);
    }
    const own = [...registered].filter((c) => !served.includes(c));
    assert.deepEqual(own.filter((c) => !contributed.includes(c)), [], 'commands the extension registers without contributing them');

    const settings = Object.keys(manifest.contributes.configuration.properties);
    for (const s of settings) {
      assert.ok(settingsRead.has(s), `setting ${s} is contributed but never read`);
    }
    const ours = [...settingsRead].filter((s) => s.startsWith('margin.'));
    assert.deepEqual(ours.filter((s) => !settings.includes(s)), [], 'settings read without being contributed');
  } finally {
    await extension.deactivate();
  }
});
