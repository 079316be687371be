// The one DOM helper the widget's components share: an element with its properties and
// children. Text is always set as textContent or a text node, never parsed as HTML, so model
// text can never become markup.

export type Prop = string | number | boolean | null | undefined | EventListener;
export type Props = Record<string, Prop>;
export type Child = Node | string | number | null | undefined | false | Child[];

/** `class` sets the class name, `text` the text content, `on<event>` adds a listener; other
 * keys are attributes (`true` an empty one; `null`, `undefined` and `false` leave them out). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props?: Props | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) {
      continue;
    }
    if (key === 'class') {
      node.className = String(value);
    } else if (key === 'text') {
      node.textContent = String(value);
    } else if (key.startsWith('on') && typeof value === 'function') {
      node.addEventListener(key.slice(2), value);
    } else {
      node.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(node, children);
  return node;
}

function append(node: Node & ParentNode, children: Child[]): void {
  for (const child of children) {
    if (Array.isArray(child)) {
      append(node, child);
    } else if (child !== null && child !== undefined && child !== false) {
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
}

/** The nodes that are there (a card that has nothing to show is null). */
export function present<T>(...nodes: (T | null | undefined)[]): T[] {
  return nodes.filter((node): node is T => node !== null && node !== undefined);
}
