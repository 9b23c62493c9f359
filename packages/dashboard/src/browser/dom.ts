/** A child of {@link h}: a node, text, or nothing. */
export type Child = Node | string | null | undefined | false;

/** What {@link h} sets on the element besides its children. */
export interface Props {
  class?: string;
  title?: string;
  /** Attributes (`aria-*`, `data-*`, `type`…). */
  attrs?: Record<string, string>;
}

/** Builds an element: text children are text nodes, never HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props.class !== undefined) el.className = props.class;
  if (props.title !== undefined) el.title = props.title;
  for (const [name, value] of Object.entries(props.attrs ?? {})) el.setAttribute(name, value);
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child);
  }
  return el;
}

/** The element with this id (throws when the page lacks it: a build mistake). */
export function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`#${id} missing from the page`);
  return el as T;
}
