// Collections: every collection with its shape, counts, index and RAM (for a tenant-bound key
// also how many records its tenant sees); create and drop for keys that may write.
import * as api from "./api.js";
import {h, mount, patch, bytes, count, errorBox} from "./dom.js";
import {confirmAction} from "./modal.js";

const NUMERIC = new Set(["dim", "vectors", "vector bytes", "index RAM", "unindexed"]);

function createForm(session, reload) {
  if (!session.can_write) return null;
  const name = h("input", {id: "new-name", placeholder: "name", size: 16});
  const dimension = h("input", {id: "new-dimension", type: "number", min: 1, value: 784, size: 6});
  const metric = h("select", {id: "new-metric"}, ["l2", "ip", "cosine"].map((m) => h("option", {value: m}, m)));
  const error = errorBox();
  const submit = async (event) => {
    event.preventDefault();
    try {
      await api.post("collections", {name: name.value.trim(), dimension: Number(dimension.value),
                                     metric: metric.value});
      name.value = "";
      error.textContent = "";
      reload();
    } catch (e) {
      error.textContent = e.message;
    }
  };
  return h("form", {class: "card", id: "create-form", onsubmit: submit},
           h("div", {class: "row"}, h("b", {}, "New collection"), h("label", {}, "name"), name,
             h("label", {}, "dimension"), dimension, h("label", {}, "metric"), metric,
             h("button", {class: "primary", type: "submit", id: "create"}, "Create")),
           error);
}

function row(info, session, reload, error) {
  const drop = async () => {
    const ok = await confirmAction({
      title: `Drop ${info.name}?`,
      message: `This deletes the collection and all ${count(info.num_vectors)} of its records. It cannot be undone (except by restoring a snapshot).`,
      action: "Drop collection", typed: info.name});
    if (!ok) return;
    try {
      await api.del(`collections/${api.enc(info.name)}`);
      reload();
    } catch (e) {
      error.textContent = e.message;
    }
  };
  const name = encodeURIComponent(info.name);
  return h("tr", {dataset: {collection: info.name}},
           h("td", {}, h("a", {href: `#/collection/${name}`}, info.name),
             info.aliases.length ? h("div", {class: "muted"}, `aliases: ${info.aliases.join(", ")}`) : null,
             info.damage ? h("div", {class: "error"}, `quarantined: ${info.damage}`) : null),
           h("td", {class: "num"}, info.dimension),
           h("td", {}, info.metric),
           h("td", {class: "num", dataset: {test: "num-vectors"}}, count(info.num_vectors)),
           session.tenant ? h("td", {class: "num", dataset: {test: "tenant-vectors"}},
                              info.tenant ? count(info.tenant.vectors_visible) : "–") : null,
           h("td", {class: "num"}, bytes(info.vector_bytes)),
           h("td", {class: "mono spec"}, info.index),
           h("td", {class: "num"}, bytes(info.index_ram_bytes)),
           h("td", {class: "num"}, count(info.unindexed_vectors)),
           h("td", {}, h("a", {href: `#/search/${name}`}, "search"), " ",
             session.can_write ? h("button", {class: "danger", type: "button", dataset: {action: "drop"}, onclick: drop}, "Drop") : null));
}

export function collectionsPage(main, session) {
  const body = h("tbody");
  const error = errorBox();
  const reload = async () => {
    try {
      const {collections} = await api.get("collections");
      patch(body, collections.length
                      ? collections.map((info) => row(info, session, reload, error))
                      : h("tr", {}, h("td", {colspan: 10, class: "muted"}, "No collections yet.")));
      error.textContent = "";
    } catch (e) {
      error.textContent = e.message;
    }
  };
  mount(main, h("h1", {}, "Collections"), createForm(session, reload), error,
        h("table", {id: "collections"},
          h("thead", {}, h("tr", {}, ["name", "dim", "metric", "vectors",
                                      session.tenant ? `${session.tenant} sees` : null,
                                      "vector bytes", "index", "index RAM", "unindexed", ""]
                                        .filter((t) => t !== null).map((t) =>
                                          h("th", {class: NUMERIC.has(t) || t.endsWith(" sees") ? "num" : ""}, t)))),
          body));
  reload();
  const timer = setInterval(reload, 5000);
  return () => clearInterval(timer);
}
