/**
 * `%%blitz` and `%%blitz_btw` cells hold a prompt, not Python: show them with Markdown
 * highlighting. The code cell's model keeps its type (the kernel still runs it); only its
 * editor mimetype changes. The notebook resets every code cell's mimetype when the kernel's
 * language arrives, so the mimetype is re-applied whenever anyone changes it or the source.
 */

import type { ICellModel } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { IObservableList } from '@jupyterlab/observables';

import { isBlitzPrompt } from './protocol';

/** What JupyterLab's Markdown cells use (GitHub-flavoured Markdown with IPython's math). */
export const PROMPT_MIMETYPE = 'text/x-ipythongfm';

export class PromptCellLook {
  /** Each watched cell model with the function that stops watching it. */
  private readonly watched = new Map<ICellModel, () => void>();
  private disposed = false;

  constructor(private readonly panel: NotebookPanel) {
    panel.context.ready.then(() => this.watchAll()).catch(() => undefined);
  }

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
    const apply = () => this.apply(model);
    model.sharedModel.changed.connect(apply);
    model.mimeTypeChanged.connect(apply);
    this.watched.set(model, () => {
      model.sharedModel.changed.disconnect(apply);
      model.mimeTypeChanged.disconnect(apply);
    });
    apply();
  }

  private apply(model: ICellModel): void {
    if (model.isDisposed) {
      return;
    }
    const prompt = isBlitzPrompt(model.sharedModel.getSource());
    const wanted = prompt ? PROMPT_MIMETYPE : this.panel.content.codeMimetype;
    if (model.mimeType !== wanted && (prompt || model.mimeType === PROMPT_MIMETYPE)) {
      model.mimeType = wanted;
    }
  }
}
