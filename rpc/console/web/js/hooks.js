// Pages for parts of Shoal still being built. Tenants (DESIGN.md §5): the page lists a
// collection's tenants through DB::ListTenants, which answers UNIMPLEMENTED until the engine
// lands — then this page fills in by itself (extend the columns with what TenantInfo grows).
// Caches (§6): the API answers UNIMPLEMENTED (GET /api/caches) until the semantic cache has a
// DB API; then give it its handler and this page per-category hit rates, thresholds, TTLs and
// evictions by reason.
import * as api from "./api.js";
import {h, mount, bytes, count, errorBox} from "./dom.js";

const NOT_BUILT = "Not built yet in this shoald: this page fills in when it lands.";

function tenantTable(tenants) {
  const columns = ["name", "state", "vectors owned", "visible", "bytes", "searches", "p50 µs", "p99 µs"];
  return h("table", {id: "tenants"},
           h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c)))),
           h("tbody", {}, tenants.length ? tenants.map((t) => h("tr", {},
               h("td", {}, t.name), h("td", {}, t.state), h("td", {class: "num"}, count(t.vectors_owned)),
               h("td", {class: "num"}, count(t.vectors_visible)), h("td", {class: "num"}, bytes(t.bytes_owned)),
               h("td", {class: "num"}, count(t.searches)), h("td", {class: "num"}, t.search_p50_us.toFixed(0)),
               h("td", {class: "num"}, t.search_p99_us.toFixed(0))))
             : h("tr", {}, h("td", {colspan: columns.length, class: "muted"}, "No tenants."))));
}

export function tenantsPage(main, session) {
  const state = h("div", {id: "tenants-state"});
  const select = h("select", {id: "tenants-collection", onchange: () => load()});
  const load = () => {
    if (!select.value) { mount(state, h("p", {class: "muted"}, "No collections.")); return; }
    api.get(`collections/${api.enc(select.value)}/tenants`).then(
        (answer) => mount(state, tenantTable(answer.tenants)),
        (e) => mount(state, e.code === "UNIMPLEMENTED" ? h("p", {class: "muted"}, NOT_BUILT) : errorBox(e)));
  };
  mount(main, h("h1", {}, "Tenants"),
        h("div", {class: "card hook"},
          h("p", {}, "Per-tenant record counts, quotas, states and search latency, per collection."),
          session.can_admin ? h("div", {class: "row"}, h("label", {}, "collection"), select)
                            : h("p", {class: "muted"}, "Listing tenants needs an admin key."),
          state));
  if (!session.can_admin) return null;
  api.get("collections").then(({collections}) => {
    mount(select, collections.map((c) => h("option", {value: c.name}, c.name)));
    load();
  }, (e) => mount(state, errorBox(e)));
  return null;
}

export function cachesPage(main) {
  const state = h("p", {class: "muted", id: "caches-state"}, "loading…");
  mount(main, h("h1", {}, "Caches"),
        h("div", {class: "card hook"},
          h("p", {}, "Semantic cache categories: hit rate, thresholds, TTLs, evictions by reason."),
          state));
  api.get("caches").then(
      (answer) => mount(state, h("pre", {class: "mono"}, JSON.stringify(answer, null, 2))),
      (e) => mount(state, e.code === "UNIMPLEMENTED" ? NOT_BUILT : errorBox(e)));
  return null;
}
