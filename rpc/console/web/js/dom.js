// Tiny DOM helpers. Text always goes in as text nodes (never innerHTML), so nothing a record
// holds can become markup.

// h("button", {class: "primary", onclick: f}, "Save") -> an element.
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) {
      element.addEventListener(name.slice(2), value);
      listening.add(element);
    }
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

// Elements h() gave an event listener: patch() replaces them, never reuses them (a reused
// button would keep the listener of the row it was first drawn for).
const listening = new WeakSet();

// Replaces `parent`'s children.
export function mount(parent, ...children) {
  parent.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

// Like mount(), for what a page re-draws at each poll: the nodes already there are kept where
// they equal their new version, and brought up to date in place where only text or attributes
// differ, so a user's text selection and the elements a test holds survive the poll.
export function patch(parent, ...children) {
  const next = children.flat().filter((c) => c !== null && c !== undefined);
  const old = [...parent.childNodes];
  next.forEach((node, i) => {
    const was = old[i];
    if (!was) {
      parent.append(node);
    } else if (listening.has(was) || listening.has(node)) {
      was.replaceWith(node);
    } else if (was.isEqualNode(node)) {
      // unchanged
    } else if (was.nodeType === Node.TEXT_NODE && node.nodeType === Node.TEXT_NODE) {
      was.data = node.data;
    } else if (was.nodeType === Node.ELEMENT_NODE && was.tagName === node.tagName) {
      for (const {name} of [...was.attributes]) if (!node.hasAttribute(name)) was.removeAttribute(name);
      for (const {name, value} of node.attributes) {
        if (was.getAttribute(name) === value) continue;
        if (name === "style") was.style.cssText = node.style.cssText;  // CSSOM, as the CSP allows
        else was.setAttribute(name, value);
      }
      patch(was, ...node.childNodes);
    } else {
      was.replaceWith(node);
    }
  });
  for (const was of old.slice(next.length)) was.remove();
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
