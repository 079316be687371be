/**
 * blitz_kernel's JupyterLab / Notebook 7 extension: the notebook bridge the agent's
 * notebook_read and notebook_edit tools use, Markdown highlighting for `%%blitz` cells, and
 * "Ask Blitz to fix" on cells that raised.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';

import { PanelBridge } from './bridge';
import { FixAction } from './fixaction';
import { PromptCellLook } from './look';

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

export default plugin;
