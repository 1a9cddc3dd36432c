// The initialize params vscode-languageclient 11 sends for this extension
// (BaseLanguageClient.initialize and its features' fillClientCapabilities),
// cut to the capabilities that bear on what margin sends back.
import { pathToFileURL } from 'node:url';
import * as margin from '../src/protocol';

export function initializeParams(vault: string) {
  const uri = pathToFileURL(vault).href;
  return {
    processId: null,
    clientInfo: { name: 'Visual Studio Code', version: '1.91.0' },
    locale: 'en',
    rootPath: vault,
    rootUri: uri,
    capabilities: {
      general: { positionEncodings: ['utf-16'], markdown: { parser: 'marked', version: '1.1.0' } },
      workspace: {
        applyEdit: true,
        workspaceEdit: { documentChanges: true, resourceOperations: ['create', 'rename', 'delete'], failureHandling: 'textOnlyTransactional' },
        didChangeConfiguration: { dynamicRegistration: true },
        didChangeWatchedFiles: { dynamicRegistration: true },
        executeCommand: { dynamicRegistration: true },
        configuration: true,
        workspaceFolders: true,
        codeLens: { refreshSupport: true },
      },
      textDocument: {
        synchronization: { dynamicRegistration: true, willSave: true, willSaveWaitUntil: true, didSave: true },
        hover: { dynamicRegistration: true, contentFormat: ['markdown', 'plaintext'] },
        codeLens: { dynamicRegistration: true, resolveSupport: { properties: ['command'] } },
      },
      window: { workDoneProgress: true, showMessage: { messageActionItem: { additionalPropertiesSupport: true } } },
    },
    initializationOptions: margin.initializationOptions(vault),
    trace: 'off',
    workspaceFolders: [{ uri, name: vault.split('/').pop() }],
  };
}
