/**
 * `%%blitz` and `%%blitz_btw` cells hold a prompt, not Python: show them with Markdown
 * highlighting. The code cell's model keeps its type (the kernel still runs it); only its
 * editor mimetype changes. The notebook resets every code cell's mimetype when the kernel's
 * language arrives, so the mimetype is re-applied whenever anyone changes it or the source.
 */

import type { ICellModel } from '@jupyterlab/cells';

import { CodeCellWatcher } from './cellwatch';
import { isBlitzPrompt } from './protocol';

/** What JupyterLab's Markdown cells use (GitHub-flavoured Markdown with IPython's math). */
export const PROMPT_MIMETYPE = 'text/x-ipythongfm';

export class PromptCellLook extends CodeCellWatcher {
  protected watchCell(model: ICellModel): () => void {
    const apply = () => this.apply(model);
    model.sharedModel.changed.connect(apply);
    model.mimeTypeChanged.connect(apply);
    apply();
    return () => {
      model.sharedModel.changed.disconnect(apply);
      model.mimeTypeChanged.disconnect(apply);
    };
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
