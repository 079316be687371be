/**
 * One notebook panel's end of the bridge: keeps a `blitz.notebook` comm open to the panel's
 * kernel whenever that kernel has blitz_kernel loaded, and answers its requests.
 *
 * The panel opens the comm (so replies reach only this panel, never a console attached to
 * the same kernel). It opens one when the kernel pings (a comm the kernel opens to this
 * target: blitz_kernel was just loaded, or has no front end), and after connecting to a
 * kernel, or a restart, when the kernel already has `blitz.notebook` comms (comm_info):
 * that covers a page reload while blitz_kernel is loaded.
 */

import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';

import { PanelDocument } from './document';
import { Dropped } from './dropped';
import { PermissionCards } from './permission';
import type { Hello } from './generated/protocol';
import { COMM_TARGET, type NotebookDocument, PROTOCOL, handleRequest, receivedRequest } from './protocol';

export const VERSION = '0.1.0';
/** Messages on the bridge's comms that are no request: each kind logged once, all ignored. */
const DROPPED = new Dropped('the blitz notebook bridge');

export class PanelBridge {
  private kernel: Kernel.IKernelConnection | null = null;
  private comm: Kernel.IComm | null = null;
  private probeAfterRestart = false;
  private disposed = false;
  private readonly document: NotebookDocument;
  private readonly cards: PermissionCards;
  private readonly connectionListeners = new Set<() => void>();

  constructor(private readonly panel: NotebookPanel) {
    this.document = new PanelDocument(panel);
    this.cards = new PermissionCards(panel.node);
    const context = panel.sessionContext;
    context.kernelChanged.connect(this.onKernelChanged, this);
    context.statusChanged.connect(this.onStatus, this);
    this.attach(context.session?.kernel ?? null);
  }

  /** Whether a comm to the kernel is open (for tests and the status of the page). */
  get connected(): boolean {
    return this.comm !== null && !this.comm.isDisposed;
  }

  /** Call `listener` whenever `connected` may have changed; returns the function that stops it. */
  onConnectionChange(listener: () => void): () => void {
    this.connectionListeners.add(listener);
    return () => this.connectionListeners.delete(listener);
  }

  private connectionChanged(): void {
    for (const listener of this.connectionListeners) {
      listener();
    }
  }

  dispose(): void {
    this.disposed = true;
    this.connectionListeners.clear();
    this.panel.sessionContext.kernelChanged.disconnect(this.onKernelChanged, this);
    this.panel.sessionContext.statusChanged.disconnect(this.onStatus, this);
    this.detach();
    this.cards.closeAll();
  }

  private attach(kernel: Kernel.IKernelConnection | null): void {
    this.detach();
    if (this.disposed || kernel === null) {
      return;
    }
    this.kernel = kernel;
    kernel.registerCommTarget(COMM_TARGET, this.onPing);
    kernel.info.then(() => this.probe(kernel)).catch(() => undefined);
  }

  private detach(): void {
    if (this.comm !== null && !this.comm.isDisposed) {
      this.comm.close();
    }
    this.comm = null;
    if (this.kernel !== null && !this.kernel.isDisposed) {
      this.kernel.removeCommTarget(COMM_TARGET, this.onPing);
    }
    this.kernel = null;
    this.connectionChanged();
  }

  private onKernelChanged(_: unknown, change: { newValue: Kernel.IKernelConnection | null }): void {
    this.attach(change.newValue);
  }

  private onStatus(_: unknown, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting') {
      this.comm = null; // the kernel's comms died with it
      this.probeAfterRestart = true;
      this.connectionChanged();
    } else if (status === 'idle' && this.probeAfterRestart && this.kernel !== null) {
      this.probeAfterRestart = false;
      void this.probe(this.kernel);
    }
  }

  /** Connect when the kernel already holds `blitz.notebook` comms (blitz_kernel is loaded). */
  private async probe(kernel: Kernel.IKernelConnection): Promise<void> {
    if (this.connected || kernel !== this.kernel) {
      return;
    }
    const reply = await kernel.requestCommInfo({ target_name: COMM_TARGET });
    const content = reply.content;
    if (content.status === 'ok' && Object.keys(content.comms).length > 0) {
      this.connect(kernel);
    }
  }

  /** The kernel pings when no front end is connected: close the ping, open our own comm. */
  private readonly onPing = (ping: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void => {
    const data = msg.content.data as { kind?: string };
    ping.close();
    const kernel = this.kernel;
    if (data.kind !== 'ping' || kernel === null) {
      return;
    }
    if (this.comm !== null && !this.comm.isDisposed) {
      this.comm.dispose(); // the kernel no longer knows it: its replies would go nowhere
    }
    this.comm = null;
    this.connect(kernel);
  };

  private connect(kernel: Kernel.IKernelConnection): void {
    if (this.connected || this.disposed) {
      return;
    }
    const comm = kernel.createComm(COMM_TARGET);
    this.comm = comm;
    comm.onMsg = msg => this.onMessage(comm, msg);
    comm.onClose = () => {
      if (this.comm === comm) {
        this.cards.closeAll(); // the kernel no longer waits for their answers
        this.comm = null;
        this.connectionChanged();
      }
    };
    const hello: Hello = { kind: 'hello', protocol: PROTOCOL, client: 'jupyterlab', version: VERSION, path: this.panel.context.path };
    comm.open(hello as unknown as KernelMessage.ICommOpenMsg['content']['data']);
    this.connectionChanged();
  }

  private async onMessage(comm: Kernel.IComm, msg: KernelMessage.ICommMsgMsg): Promise<void> {
    const data = receivedRequest(msg.content.data, DROPPED);
    if (data === null) {
      return; // the kernel's welcome, or no request (logged once per kind)
    }
    const reply = await handleRequest(this.document, data, this.cards);
    if (!comm.isDisposed) {
      comm.send(reply as unknown as KernelMessage.ICommMsgMsg['content']['data']);
    }
  }
}
