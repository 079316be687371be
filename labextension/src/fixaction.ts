/**
 * The "Ask Blitz to fix" button on each code cell whose last run ended in an error, in a
 * notebook whose kernel can answer it (blitz_kernel loaded: the bridge is connected, or the
 * kernel is the Blitz kernel). Clicking it inserts `%%blitz` / "Fix the error in @cell:N"
 * below the cell and selects it; it runs nothing.
 *
 * The button is a plain DOM element at the end of the cell's node (not a cell-toolbar item),
 * so it needs no settings schema and shows in JupyterLab and Notebook 7 alike. It is shown
 * or removed whenever a cell's outputs or execution count change, a cell is added, or the
 * bridge connects or disconnects.
 */

import type { ICellModel, ICodeCellModel } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';

import type { PanelBridge } from './bridge';
import { CodeCellWatcher } from './cellwatch';
import { type CellRun, FIX_LABEL, fixPrompt, isBlitzKernel, offerFix } from './fix';

/** The class of the button's container (style/index.css). */
export const FIX_CLASS = 'blitz-fix-action';

export class FixAction extends CodeCellWatcher {
  private readonly stopBridge: () => void;

  constructor(
    panel: NotebookPanel,
    private readonly bridge: PanelBridge
  ) {
    super(panel);
    this.stopBridge = bridge.onConnectionChange(() => this.updateAll());
    panel.sessionContext.kernelChanged.connect(this.updateAll, this);
  }

  dispose(): void {
    this.stopBridge();
    this.panel.sessionContext.kernelChanged.disconnect(this.updateAll, this);
    super.dispose();
  }

  private get blitzAvailable(): boolean {
    return this.bridge.connected || isBlitzKernel(this.panel.sessionContext.session?.kernel?.name);
  }

  protected watchCell(model: ICellModel): () => void {
    const code = model as ICodeCellModel;
    const update = () => this.update(code);
    code.outputs.changed.connect(update);
    code.stateChanged.connect(update);
    update();
    return () => {
      code.outputs.changed.disconnect(update);
      code.stateChanged.disconnect(update);
    };
  }

  private updateAll(): void {
    for (const model of this.watched.keys()) {
      this.update(model as ICodeCellModel);
    }
  }

  private update(model: ICodeCellModel): void {
    if (this.disposed || model.isDisposed) {
      return;
    }
    const cell = this.panel.content.widgets.find(widget => widget.model === model);
    if (cell === undefined) {
      return;
    }
    const count = offerFix(this.blitzAvailable, snapshot(model));
    const existing = cell.node.querySelector<HTMLElement>(`:scope > .${FIX_CLASS}`);
    if (count === null) {
      existing?.remove();
      return;
    }
    const holder = existing ?? this.createButton(cell.node, model);
    holder.dataset.executionCount = String(count);
  }

  private createButton(parent: HTMLElement, model: ICodeCellModel): HTMLElement {
    const holder = document.createElement('div');
    holder.className = FIX_CLASS;
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'jp-Button jp-mod-styled';
    button.textContent = FIX_LABEL;
    button.setAttribute('aria-label', FIX_LABEL);
    button.title = 'Insert a %%blitz cell below that asks the agent to fix this error (it does not run it)';
    button.addEventListener('click', event => {
      event.stopPropagation();
      this.insertFix(model);
    });
    holder.appendChild(button);
    parent.appendChild(holder);
    return holder;
  }

  /** Insert the prompt cell below the failed one and select it; the user runs it. */
  private insertFix(model: ICodeCellModel): void {
    const notebook = this.panel.content;
    const count = model.executionCount;
    const index = notebook.widgets.findIndex(widget => widget.model === model);
    if (notebook.model === null || count === null || index < 0) {
      return;
    }
    notebook.model.sharedModel.insertCell(index + 1, { cell_type: 'code', source: fixPrompt(count), metadata: {} });
    notebook.deselectAll();
    notebook.activeCellIndex = index + 1;
    notebook.mode = 'command';
    notebook.activate();
    void notebook.scrollToItem(index + 1, 'smart');
  }
}

function snapshot(model: ICodeCellModel): CellRun {
  const outputs: { output_type: string }[] = [];
  for (let i = 0; i < model.outputs.length; i++) {
    outputs.push({ output_type: model.outputs.get(i).type });
  }
  return { cell_type: model.type, source: model.sharedModel.getSource(), execution_count: model.executionCount ?? null, outputs };
}
