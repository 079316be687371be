/**
 * A NotebookPanel as the protocol's NotebookDocument: reads cell models, edits through the
 * shared model (so the change is one undoable step, and collaborative sessions see it), and
 * shows the user what changed.
 */

import type { ICodeCellModel } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';

import type { CellSnapshot, CellType, NotebookDocument, OutputJSON } from './protocol';

/** The class a changed cell wears for a moment (style/index.css). */
export const CHANGED_CLASS = 'blitz-mod-changed';
const HIGHLIGHT_MS = 2500;

export class PanelDocument implements NotebookDocument {
  constructor(private readonly panel: NotebookPanel) {}

  get path(): string {
    return this.panel.context.path;
  }

  private get shared() {
    const model = this.panel.content.model;
    if (model === null) {
      throw new Error('the notebook has no model (is it still loading?)');
    }
    return model.sharedModel;
  }

  cellCount(): number {
    return this.shared.cells.length;
  }

  cell(index: number): CellSnapshot {
    const model = this.panel.content.model!.cells.get(index);
    const type = model.type as CellType;
    const snapshot: CellSnapshot = {
      id: model.id,
      cell_type: type,
      source: model.sharedModel.getSource(),
      execution_count: null,
      running: false,
      outputs: []
    };
    const blitz = model.getMetadata('blitz');
    if (typeof blitz === 'object' && blitz !== null && !Array.isArray(blitz)) {
      snapshot.blitz = blitz as Record<string, unknown>;
    }
    if (type === 'code') {
      const code = model as ICodeCellModel;
      snapshot.execution_count = code.executionCount ?? null;
      snapshot.running = code.executionState === 'running';
      for (let i = 0; i < code.outputs.length; i++) {
        snapshot.outputs.push(code.outputs.get(i).toJSON() as OutputJSON);
      }
    }
    return snapshot;
  }

  insertCell(index: number, cellType: CellType, source: string): string {
    return this.shared.insertCell(index, { cell_type: cellType, source, metadata: {} }).id;
  }

  setSource(index: number, source: string): void {
    this.shared.getCell(index).setSource(source);
  }

  replaceWithType(index: number, cellType: CellType, source: string): string {
    let id = '';
    this.shared.transact(() => {
      this.shared.deleteCell(index);
      id = this.shared.insertCell(index, { cell_type: cellType, source, metadata: {} }).id;
    });
    return id;
  }

  deleteCell(index: number): void {
    this.shared.deleteCell(index);
  }

  setBlitz(index: number, blitz: Record<string, unknown> | null): void {
    const model = this.panel.content.model!.cells.get(index);
    if (blitz === null) {
      model.deleteMetadata('blitz');
    } else {
      model.setMetadata('blitz', blitz as Parameters<typeof model.setMetadata>[1]);
    }
  }

  setOutputs(
    index: number,
    outputs: OutputJSON[],
    executionCount: number | null,
    blitz: Record<string, unknown> | null
  ): void {
    const model = this.panel.content.model!.cells.get(index) as ICodeCellModel;
    // Not inside a shared-model transaction: the output model mirrors each change into the
    // shared model at once, and a deferred mirror would come back as a second copy.
    model.outputs.clear();
    for (const output of outputs) {
      model.outputs.add(output as unknown as Parameters<typeof model.outputs.add>[0]);
    }
    model.executionCount = executionCount;
    this.setBlitz(index, blitz);
  }

  reveal(index: number): void {
    const notebook = this.panel.content;
    void notebook.scrollToItem(index, 'smart').then(() => {
      const widget = notebook.widgets[index];
      if (widget === undefined) {
        return;
      }
      widget.node.classList.add(CHANGED_CLASS);
      window.setTimeout(() => widget.node.classList.remove(CHANGED_CLASS), HIGHLIGHT_MS);
    });
  }
}
