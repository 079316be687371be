/**
 * blitz_kernel's JupyterLab / Notebook 7 extension: the notebook bridge the agent's
 * notebook_read and notebook_edit tools use, Markdown highlighting for `%%blitz` cells,
 * "Ask Blitz to fix" on cells that raised, "Blitz" inline completion in code cells, and the
 * Blitz side panel (sessions, search, usage, audit).
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICompletionProviderManager } from '@jupyterlab/completer';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';

import { PanelBridge } from './bridge';
import { BlitzInlineProvider } from './completion';
import { notebookSurroundings, panelVariables, ServerCompletionClient } from './completionserver';
import { FixAction } from './fixaction';
import { PromptCellLook } from './look';
import { BlitzPanel, PanelClient } from './panel';

/** The bridge of each open notebook panel, by panel id (tests read `connected`). */
export const bridges = new Map<string, PanelBridge>();

function setUp(panel: NotebookPanel): void {
  if (bridges.has(panel.id)) {
    return;
  }
  const look = new PromptCellLook(panel);
  const bridge = new PanelBridge(panel);
  bridges.set(panel.id, bridge);
  const fix = new FixAction(panel, bridge);
  panel.disposed.connect(() => {
    fix.dispose();
    look.dispose();
    bridge.dispose();
    bridges.delete(panel.id);
  });
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'blitz-kernel:notebook',
  description: 'The notebook bridge for blitz_kernel agents, and Markdown highlighting for %%blitz cells.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach(setUp);
    tracker.widgetAdded.connect((_, panel) => setUp(panel));
  }
};

/** Registered before the app is restored, so JupyterLab's inline completer lists it. */
const completion: JupyterFrontEndPlugin<void> = {
  id: 'blitz-kernel:completion',
  description: 'Blitz inline completion: ghost text from the workspace\'s completion.model.',
  autoStart: true,
  optional: [ICompletionProviderManager],
  activate: (app: JupyterFrontEnd, manager: ICompletionProviderManager | null) => {
    if (manager === null) {
      return; // a front end without JupyterLab's completer: nothing to register with
    }
    const client = new ServerCompletionClient(app.serviceManager.serverSettings);
    manager.registerInlineProvider(new BlitzInlineProvider(client, notebookSurroundings, panelVariables));
  }
};

/** The Blitz side panel in the left sidebar (docs/panel.md). */
const sidePanel: JupyterFrontEndPlugin<void> = {
  id: 'blitz-kernel:panel',
  description: 'The Blitz side panel: the sessions of the notebook\'s folder, search, usage and the audit trail.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    const panel = new BlitzPanel(new PanelClient(app.serviceManager.serverSettings), tracker);
    app.shell.add(panel, 'left', { rank: 900 });
  }
};

export default [plugin, completion, sidePanel];
