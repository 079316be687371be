// What the widget needs of anywidget's model, typed by the protocol generated from the Python
// models (labextension/src/generated, docs/widget.md): the synced traits it reads and the
// commands it sends. Traits are read loosely (a field may be missing while the kernel has not
// set it yet), so every component falls back as the kernel's defaults would.

import type {
  TurnWidgetCommand,
  TurnWidgetState,
  UndoWidgetCommand,
  UndoWidgetState
} from '../../src/generated/protocol';

/** The part of anywidget's `AnyModel` a view uses. */
export interface WidgetModel<State> {
  get<K extends keyof State>(name: K): State[K] | undefined;
  set<K extends keyof State>(name: K, value: State[K]): void;
  save_changes(): void;
  on(event: string, handler: () => void): void;
  off(event: string, handler: () => void): void;
  send(message: unknown): void;
}

export type TurnModel = WidgetModel<TurnWidgetState>;
export type UndoModel = WidgetModel<UndoWidgetState>;

/** Distributes `Omit` over a union of commands. */
type WithoutTurn<T> = T extends unknown ? Omit<T, 'turn_id'> : never;

/** A command of the turn widget, before the view stamps it with its turn's id. */
export type TurnCommand = WithoutTurn<TurnWidgetCommand>;
export type SendTurn = (command: TurnCommand) => void;
export type UndoCommand = UndoWidgetCommand;

/** An object trait read as it may arrive: any field missing. */
export type Loose<T> = { [K in keyof T]?: T[K] };

/** anywidget's entry point: draws into `el`, returns the clean-up. */
export interface RenderProps<Model> {
  model: Model;
  el: HTMLElement;
}
