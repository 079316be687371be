/**
 * The part of anywidget's front-end API that blitz's widgets use, typed by the widget's state
 * (one of the generated `…WidgetState` types): `model.get("status")` has the type of the
 * trait, and `model.send` takes the widget's command type.
 */

export interface WidgetModel<State, Command> {
  get<K extends keyof State>(name: K): State[K];
  on(event: `change:${string & keyof State}`, callback: () => void): void;
  off(event: `change:${string & keyof State}`, callback: () => void): void;
  send(content: Command): void;
}

export interface RenderProps<State, Command> {
  model: WidgetModel<State, Command>;
  el: HTMLElement;
}

/** What `render` returns: called when the view is removed. */
export type Cleanup = () => void;
