// One collection: its description, its records browsed with a filter (page by page in key
// order, or with a "near" key the ones nearest to that record), one record's vector and
// attributes, and a picture of image-like vectors.
import * as api from "./api.js";
import {h, mount, bytes, count, keyText, parseKey, errorBox} from "./dom.js";
import {picture, isImageLike} from "./picture.js";

const FILTER_EXAMPLE = '{"equals": {"name": "label", "value": {"int_value": 3}}}';

function infoCard(info, session) {
  const item = (label, value) => h("div", {}, h("label", {}, label), h("b", {}, value));
  return h("div", {class: "card row", id: "collection-info"},
           item("dimension", info.dimension), item("metric", info.metric),
           item("vectors", count(info.num_vectors)),
           info.tenant !== undefined ? item(`tenant ${session.tenant} sees`,
                                            info.tenant ? count(info.tenant.vectors_visible) : "none") : null,
           item("index", info.index),
           item("index RAM", bytes(info.index_ram_bytes)),
           item("unindexed", count(info.unindexed_vectors)),
           info.postings ? item("postings", count(info.postings)) : null,
           info.aliases.length ? item("aliases", info.aliases.join(", ")) : null,
           info.damage ? h("div", {class: "error"}, `quarantined: ${info.damage}`) : null);
}

function attributesText(record) {
  if (!record) return "(deleted)";
  const parts = Object.entries(record.attributes).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  if (record.tags.length) parts.push(`tags: ${record.tags.join(", ")}`);
  return parts.join("  ");
}

export function recordDetail(record, dimension) {
  if (!record) return h("div", {class: "card muted"}, "No such record.");
  return h("div", {class: "card", id: "record-detail"},
           h("h2", {}, `Record ${keyText(record.key)}`),
           h("div", {class: "row"},
             isImageLike(dimension) ? picture(record.vector, 168) : null,
             h("div", {},
               h("div", {}, h("label", {}, "attributes"), h("span", {class: "mono"}, JSON.stringify(record.attributes))),
               h("div", {}, h("label", {}, "tags"), h("span", {class: "mono"}, JSON.stringify(record.tags))))),
           h("div", {}, h("label", {}, `vector (${record.vector.length} values)`)),
           h("div", {class: "vector mono"}, `[${record.vector.map((v) => +v.toPrecision(6)).join(", ")}]`));
}

export function collectionPage(main, session, [name]) {
  const detail = h("div");
  const results = h("tbody");
  const error = errorBox();
  const filter = h("textarea", {id: "browse-filter", rows: 2, placeholder: `filter (shoal.v1.Filter as JSON), e.g. ${FILTER_EXAMPLE}`});
  const near = h("input", {id: "browse-near", placeholder: "near key (optional)", size: 14});
  const limit = h("input", {id: "browse-limit", type: "number", min: 1, max: 1000, value: 24, size: 5});
  const keys = h("input", {id: "get-keys", placeholder: "keys, e.g. 1, 2, \"doc-7\"", size: 30});
  const more = h("button", {type: "button", id: "browse-next", hidden: true}, "Next page");
  let dimension = 0;
  let nextToken = "";

  const show = async (key) => {
    try {
      const {records} = await api.post(`collections/${api.enc(name)}/get`, {keys: [key]});
      mount(detail, recordDetail(records[0], dimension));
    } catch (e) { error.textContent = e.message; }
  };
  const rowOf = (key, distance, record) =>
      h("tr", {dataset: {key: keyText(key)}},
        h("td", {}, h("a", {href: "#", onclick: (e) => { e.preventDefault(); show(key); }}, keyText(key))),
        h("td", {}, record && isImageLike(dimension) ? picture(record.vector, 42) : null),
        h("td", {class: "mono"}, attributesText(record)),
        h("td", {class: "num"}, distance === null ? "" : +distance.toPrecision(6)),
        h("td", {}, h("a", {href: `#/search/${encodeURIComponent(name)}/${encodeURIComponent(JSON.stringify(key))}`}, "similar")));
  const browse = async (event, pageToken = "") => {
    if (event) event.preventDefault();
    try {
      const body = {limit: Number(limit.value)};
      if (pageToken) body.page_token = pageToken;
      if (filter.value.trim()) {
        try { body.filter = JSON.parse(filter.value); } catch (e) { throw new Error(`filter: not JSON (${e.message})`); }
      }
      if (near.value.trim()) body.near = parseKey(near.value);
      const answer = await api.post(`collections/${api.enc(name)}/browse`, body);
      mount(results, answer.records.length ? answer.records.map((r) => rowOf(r.key, r.distance, r.record))
                                           : h("tr", {}, h("td", {colspan: 5, class: "muted"}, "No record passes.")));
      nextToken = answer.next_page_token || "";
      more.hidden = !nextToken;
      error.textContent = "";
    } catch (e) { error.textContent = e.message; }
  };
  const getKeys = async (event) => {
    event.preventDefault();
    try {
      const list = keys.value.split(",").map((k) => k.trim()).filter((k) => k).map(parseKey);
      const {records} = await api.post(`collections/${api.enc(name)}/get`, {keys: list});
      mount(results, records.map((r, i) => rowOf(list[i], null, r)));
      error.textContent = "";
    } catch (e) { error.textContent = e.message; }
  };

  more.onclick = () => browse(null, nextToken);
  const header = h("div");
  mount(main, h("h1", {}, `Collection ${name}`), header, error,
        h("form", {class: "card", id: "browse-form", onsubmit: browse},
          h("div", {class: "row"}, h("b", {}, "Browse"), near, h("label", {}, "limit"), limit,
            h("button", {class: "primary", type: "submit", id: "browse"}, "Browse"),
            more,
            h("button", {type: "button", onclick: () => { filter.value = FILTER_EXAMPLE; }}, "Example filter")),
          filter),
        h("form", {class: "card row", id: "get-form", onsubmit: getKeys},
          h("b", {}, "Get by key"), keys, h("button", {type: "submit", id: "get"}, "Get")),
        detail,
        h("table", {id: "records"},
          h("thead", {}, h("tr", {}, ["key", "", "attributes", "distance", ""].map((t) => h("th", {}, t)))),
          results));
  api.get(`collections/${api.enc(name)}`).then((info) => {
    dimension = info.dimension;
    mount(header, infoCard(info, session));
    browse();
  }, (e) => { error.textContent = e.message; });
}
