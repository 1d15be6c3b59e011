// Search by example: pick a record (by key) or paste a vector, and see its nearest neighbours
// with their distances — as pictures when the vectors are images.
import * as api from "./api.js";
import {h, mount, keyText, parseKey, errorBox} from "./dom.js";
import {picture, isImageLike} from "./picture.js";

function hitCard(hit, dimension, collection) {
  const record = hit.record;
  const attributes = record ? Object.entries(record.attributes).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ") : "(deleted)";
  return h("div", {class: "hit", dataset: {key: keyText(hit.key)}},
           record && isImageLike(dimension) ? picture(record.vector, 112) : null,
           h("div", {}, h("a", {href: `#/search/${encodeURIComponent(collection)}/${encodeURIComponent(JSON.stringify(hit.key))}`}, keyText(hit.key))),
           h("div", {class: "muted"}, `d = ${+hit.distance.toPrecision(6)}`),
           h("div", {class: "mono"}, attributes));
}

// Numbers separated by commas, spaces or newlines, with or without [ ].
function parseVector(text) {
  const parts = text.replace(/[\[\]]/g, " ").split(/[\s,]+/).filter((p) => p);
  const values = parts.map(Number);
  const bad = values.findIndex((v) => !Number.isFinite(v));
  if (bad >= 0) throw new Error(`vector[${bad}]: "${parts[bad]}" is not a number`);
  return values;
}

export function searchPage(main, session, [collection, keyJson]) {
  const select = h("select", {id: "search-collection"});
  const key = h("input", {id: "search-key", placeholder: "record key", size: 14,
                          value: keyJson ? keyText(JSON.parse(keyJson)) : ""});
  const vector = h("textarea", {id: "search-vector", rows: 3, placeholder: "…or paste a vector: numbers separated by commas or spaces"});
  const k = h("input", {id: "search-k", type: "number", min: 1, max: 1000, value: 10, size: 5});
  const filter = h("textarea", {id: "search-filter", rows: 1, placeholder: "optional filter (shoal.v1.Filter as JSON)"});
  const query = h("div");
  const hits = h("div", {class: "hits", id: "hits"});
  const error = errorBox();
  const dimensions = new Map();

  const run = async (event) => {
    if (event) event.preventDefault();
    const name = select.value;
    if (!name) return;
    try {
      const body = {k: Number(k.value)};
      if (vector.value.trim()) body.vector = parseVector(vector.value);
      else if (key.value.trim()) body.key = parseKey(key.value);
      else throw new Error("key: give a record key or a vector");
      if (filter.value.trim()) body.filter = JSON.parse(filter.value);
      mount(hits, h("span", {class: "muted"}, "searching…"));
      const answer = await api.post(`collections/${api.enc(name)}/search`, body);
      const dimension = dimensions.get(name);
      mount(query, h("div", {class: "row card", id: "query"}, h("b", {}, "Query"),
                     isImageLike(dimension) ? picture(answer.query, 112) : null,
                     body.key !== undefined ? h("span", {}, `record ${keyText(body.key)}`) : h("span", {}, `${answer.query.length} values`)));
      mount(hits, answer.hits.length ? answer.hits.map((hit) => hitCard(hit, dimension, name))
                                     : h("span", {class: "muted"}, "No hits."));
      hits.dataset.done = "1";
      error.textContent = "";
    } catch (e) {
      mount(hits);
      error.textContent = e.message;
    }
  };

  mount(main, h("h1", {}, "Search by example"),
        h("form", {class: "card", id: "search-form", onsubmit: run},
          h("div", {class: "row"}, h("label", {}, "collection"), select, h("label", {}, "key"), key,
            h("label", {}, "k"), k, h("button", {class: "primary", type: "submit", id: "search"}, "Search")),
          vector, filter),
        error, query, hits);
  api.get("collections").then(({collections}) => {
    mount(select, collections.map((c) => h("option", {value: c.name}, c.name)));
    for (const c of collections) dimensions.set(c.name, c.dimension);
    if (collection) select.value = collection;
    if (collection && keyJson) run();
  }, (e) => { error.textContent = e.message; });
}
