// Checks the Obsidian release folder that editors/package.sh wrote to
// bin/editors/obsidian/margin, as a person installs it (copied into
// .obsidian/plugins/, or fetched by BRAT from a GitHub release's assets):
// exactly the files Obsidian reads, a manifest whose version versions.json
// maps to its minAppVersion, and a main.js that Obsidian can load: a bundle
// needing only what Obsidian provides, whose plugin, loaded with a stand-in
// for the obsidian module, registers its commands and starts margin serve.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import Module, { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

const root = resolve(__dirname, '../../..');
const source = resolve(__dirname, '..');
const folder = join(root, 'bin/editors/obsidian/margin');
const bin = process.env.MARGIN_BIN ?? join(root, 'bin/margin');

function json(path: string) {
  return JSON.parse(readFileSync(path, 'utf8'));
}

test('the folder holds the files Obsidian and BRAT read, and no others', () => {
  const files = ['main.js', 'manifest.json', 'versions.json'];
  if (existsSync(join(source, 'styles.css'))) {
    files.push('styles.css');
  }
  assert.deepEqual(readdirSync(folder).sort(), files.sort());
});

test('the manifest is the one in the repository, and versions.json knows its version', () => {
  const manifest = json(join(folder, 'manifest.json'));
  assert.deepEqual(manifest, json(join(source, 'manifest.json')));
  assert.equal(manifest.id, 'margin', 'Obsidian keeps a plugin in .obsidian/plugins/<id>');
  assert.equal(manifest.version, json(join(source, 'package.json')).version);
  assert.equal(json(join(folder, 'versions.json'))[manifest.version], manifest.minAppVersion);
  // A release carries the .vsix of the same version: BRAT installs from the
  // newest release, so each must hold the Obsidian files too.
  assert.ok(existsSync(join(root, 'bin/editors', `margin-${manifest.version}.vsix`)), `no margin-${manifest.version}.vsix beside it`);
});

test('main.js needs only what Obsidian provides', () => {
  const bundle = readFileSync(join(folder, 'main.js'), 'utf8');
  const required = new Set([...bundle.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1]));
  const outside = [...required].filter((r) => !['obsidian', 'electron'].includes(r) && !builtinModules.includes(r.replace(/^node:/, '')));
  assert.deepEqual(outside, [], 'modules the folder does not carry');
});

// The parts of Obsidian's API the plugin touches while it loads, recording
// the commands it adds. Whatever else it calls on the plugin is a no-op, and
// any other class it imports from obsidian an empty one, so the plugin may
// grow (views, ribbon icons) without this test knowing Obsidian's whole API.
const commands: string[] = [];
let layoutReady: () => void = () => {};
const noop = () => undefined;

class Plugin {
  constructor(
    readonly app: object,
    readonly manifest: object,
  ) {}
  addCommand(c: { id: string }): void {
    commands.push(c.id);
  }
  addStatusBarItem(): object {
    return { setText: noop };
  }
  async loadData(): Promise<object> {
    return { path: bin };
  }
}
Object.setPrototypeOf(Plugin.prototype, new Proxy({}, { get: (_, key) => (key === 'then' ? undefined : noop) }));

class FileSystemAdapter {
  constructor(private readonly dir: string) {}
  getBasePath(): string {
    return this.dir;
  }
}

class Notice {
  constructor(message: string) {
    throw new Error(`the plugin gave notice: ${message}`);
  }
}

const given: Record<string, unknown> = { Plugin, FileSystemAdapter, Notice };
const obsidian = new Proxy(given, {
  get: (target, key) => {
    if (typeof key !== 'string' || key === '__esModule' || key === 'default') {
      return undefined;
    }
    if (key in target) {
      return target[key];
    }
    return /^[A-Z]/.test(key) ? class {} : noop;
  },
});

test('main.js loads as a plugin that registers its commands and starts margin serve', async () => {
  const vault = mkdtempSync(join(tmpdir(), 'margin-obsidian-'));
  mkdirSync(join(vault, '.obsidian'));
  const loader = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = loader._load;
  loader._load = (request, ...rest) => (request === 'obsidian' ? obsidian : load(request, ...rest));
  let MarginPlugin: new (app: object, manifest: object) => { onload(): Promise<void>; onunload(): Promise<void>; margin: unknown };
  try {
    MarginPlugin = require(join(folder, 'main.js')).default;
  } finally {
    loader._load = load;
  }
  const app = {
    vault: { adapter: new FileSystemAdapter(vault) },
    workspace: {
      on: () => ({}),
      onLayoutReady: (f: () => void) => (layoutReady = f),
      getActiveFile: () => null,
      getLeavesOfType: () => [],
    },
  };
  const plugin = new MarginPlugin(app, json(join(folder, 'manifest.json')));
  try {
    await plugin.onload();
    assert.ok(commands.length > 0, 'no command registered');
    await (layoutReady() as unknown as Promise<void>);
    assert.ok(plugin.margin, 'margin serve did not start');
  } finally {
    await plugin.onunload();
    rmSync(vault, { recursive: true, force: true });
  }
});
