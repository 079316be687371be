/**
 * Permission cards: the notebook's answer to `ask_permission`, a mutating call from a client
 * outside the notebook (`blitz mcp`, `blitz acp`) that the kernel asks about here.
 *
 * A card names the client and the calls, shows each call's preview, and is answered with
 * Allow, Always (this tool, for the rest of the session) or Deny; it is keyboard reachable:
 * Allow takes the focus, Tab moves between the buttons, Escape denies. The kernel may take a
 * card back (`close_permission`: answered in the ACP client first, expired, cancelled); a
 * card taken back or left when the comm closes answers nothing (the kernel stopped waiting).
 */

import type { AskPermissionParams, AskPermissionResult } from './messages';
import type { PermissionAsker } from './protocol';

type Answer = AskPermissionResult['answer'];

export class PermissionCards implements PermissionAsker {
  private readonly open = new Map<string, HTMLElement>();

  constructor(private readonly host: HTMLElement) {}

  ask(params: AskPermissionParams): Promise<AskPermissionResult> {
    this.close(params.question);
    return new Promise(resolve => {
      const card = this.card(params, (answer, reason) => {
        this.close(params.question);
        resolve(reason === null ? { answer } : { answer, reason });
      });
      this.open.set(params.question, card);
      document.body.appendChild(card);
      card.querySelector<HTMLButtonElement>('button[data-answer="allow"]')?.focus();
    });
  }

  close(question: string): boolean {
    const card = this.open.get(question);
    if (card === undefined) {
      return false;
    }
    this.open.delete(question);
    card.remove();
    return true;
  }

  closeAll(): void {
    for (const question of [...this.open.keys()]) {
      this.close(question);
    }
  }

  private card(params: AskPermissionParams, answered: (answer: Answer, reason: string | null) => void): HTMLElement {
    const card = document.createElement('div');
    card.className = 'blitz-permission-card';
    card.dataset.question = params.question;
    card.dataset.client = params.client;
    card.dataset.panel = this.host.id;
    card.setAttribute('role', 'alertdialog');
    const names = params.calls.map(call => call.name).join(', ');
    card.setAttribute('aria-label', `${params.client} asks to run ${names}`);
    Object.assign(card.style, {
      position: 'fixed',
      right: '16px',
      bottom: '16px',
      zIndex: '10000',
      maxWidth: '560px',
      padding: '12px',
      background: 'var(--jp-layout-color1, #fff)',
      color: 'var(--jp-ui-font-color1, #000)',
      border: '1px solid var(--jp-border-color1, #999)',
      borderRadius: '6px',
      boxShadow: '0 2px 12px rgba(0, 0, 0, 0.3)',
      fontSize: 'var(--jp-ui-font-size1, 13px)'
    });
    const title = document.createElement('div');
    title.className = 'blitz-permission-title';
    title.style.fontWeight = 'bold';
    title.textContent = `${params.client} (outside the notebook) asks to run ${names}`;
    card.appendChild(title);
    for (const call of params.calls) {
      const preview = document.createElement('pre');
      preview.className = 'blitz-permission-preview';
      Object.assign(preview.style, {
        maxHeight: '240px',
        overflow: 'auto',
        whiteSpace: 'pre-wrap',
        margin: '8px 0'
      });
      preview.textContent = `${call.name}\n${call.preview}`;
      card.appendChild(preview);
    }
    if (typeof params.timeout_s === 'number') {
      const note = document.createElement('div');
      note.className = 'blitz-permission-note';
      note.textContent = `Without an answer within ${params.timeout_s} s, the kernel's approval.headless policy decides.`;
      card.appendChild(note);
    }
    const buttons = document.createElement('div');
    buttons.style.marginTop = '8px';
    const labels: [Answer, string, string][] = [
      ['allow', 'Allow', 'Run this call'],
      ['always', 'Always', `Allow ${names} for the rest of this session`],
      ['deny', 'Deny', 'Refuse this call (Escape)']
    ];
    for (const [answer, label, hint] of labels) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'jp-Button';
      button.dataset.answer = answer;
      button.textContent = label;
      button.title = hint;
      button.style.marginRight = '8px';
      button.addEventListener('click', () =>
        answered(answer, answer === 'deny' ? `denied in the notebook by the user` : null)
      );
      buttons.appendChild(button);
    }
    card.appendChild(buttons);
    card.addEventListener('keydown', event => {
      if (event.key === 'Escape') {
        event.preventDefault();
        answered('deny', 'denied in the notebook by the user');
      }
    });
    return card;
  }
}
