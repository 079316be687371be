/**
 * Watching every code cell of a notebook, for features that react to each cell (the prompt
 * look, the "Ask Blitz to fix" button): one place that follows cells being added and removed
 * and stops watching them when they go, so no feature leaks signal connections.
 */

import type { ICellModel } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { IObservableList } from '@jupyterlab/observables';

export abstract class CodeCellWatcher {
  /** Each watched code cell model with the function that stops watching it. */
  protected readonly watched = new Map<ICellModel, () => void>();
  protected disposed = false;

  constructor(protected readonly panel: NotebookPanel) {
    panel.context.ready.then(() => this.watchAll()).catch(() => undefined);
  }

  /** Start watching one code cell; return what stops it. Called once per cell model. */
  protected abstract watchCell(model: ICellModel): () => void;

  dispose(): void {
    this.disposed = true;
    this.panel.content.model?.cells.changed.disconnect(this.onCellsChanged, this);
    for (const stop of this.watched.values()) {
      stop();
    }
    this.watched.clear();
  }

  private watchAll(): void {
    const model = this.panel.content.model;
    if (this.disposed || model === null) {
      return;
    }
    model.cells.changed.connect(this.onCellsChanged, this);
    for (let i = 0; i < model.cells.length; i++) {
      this.watch(model.cells.get(i));
    }
  }

  private onCellsChanged(_: unknown, change: IObservableList.IChangedArgs<ICellModel>): void {
    for (const model of change.oldValues) {
      this.watched.get(model)?.();
      this.watched.delete(model);
    }
    for (const model of change.newValues) {
      this.watch(model);
    }
  }

  private watch(model: ICellModel): void {
    if (this.watched.has(model) || model.type !== 'code') {
      return;
    }
    this.watched.set(model, this.watchCell(model));
  }
}
