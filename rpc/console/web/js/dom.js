// Tiny DOM helpers. Text always goes in as text nodes (never innerHTML), so nothing a record
// holds can become markup.

// h("button", {class: "primary", onclick: f}, "Save") -> an element.
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    else if (name in element && name !== "list") element[name] = value;
    else element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

// Replaces `parent`'s children.
export function mount(parent, ...children) {
  parent.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

export function bytes(n) {
  if (n === null || n === undefined) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

export function count(n) {
  return n === null || n === undefined ? "" : Number(n).toLocaleString("en-US");
}

// A key as the API writes it: numbers for uint64 keys, strings for string keys.
export function keyText(key) {
  return typeof key === "string" ? JSON.stringify(key) : String(key);
}

// Parses what a user typed as a key: digits = a numeric key, "quoted" or anything else = a
// string key.
export function parseKey(text) {
  const t = text.trim();
  if (/^[0-9]+$/.test(t)) return Number(t);
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) return t.slice(1, -1);
  return t;
}

export function errorBox(error) {
  return h("div", {class: "error", dataset: {test: "error"}}, error ? String(error.message || error) : "");
}
