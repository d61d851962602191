// Building elements without innerHTML: every value from the API goes in as text, never as markup.

type Child = Node | string | null | undefined | false;
type Attributes = Record<string, string | boolean | number | undefined | EventListener>;

/** h("button", { type: "button", onclick }, "Save"): attributes, `on…` listeners, then children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

/** Replaces what `parent` holds with `children`. */
export function fill(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** A unique id for label/for and aria-describedby pairs. */
let nextId = 0;
export function uniqueId(prefix: string): string {
  return `${prefix}-${++nextId}`;
}
