// Tenants (DESIGN.md §5) of one collection: state, quotas, record counts and search latency.
// Unbound keys list every tenant (as TenantService/ListTenants); a tenant-bound key sees only
// its own tenant's row.
import * as api from "./api.js";
import {h, mount, bytes, count, errorBox} from "./dom.js";

function quota(n, format) {
  return n ? format(n) : "–";
}

function tenantTable(tenants) {
  const columns = ["name", "state", "vectors owned", "visible", "bytes owned", "quota vectors",
                   "quota bytes", "quota searches/s", "searches", "p50", "p99"];
  // "µs" stays out of the upper-cased header text: upper-cased it reads "MS".
  const unit = (c) => (c === "p50" || c === "p99" ? [`search ${c} `, h("span", {class: "unit"}, "µs")] : c);
  return h("table", {id: "tenants"},
           h("thead", {}, h("tr", {}, columns.map((c, i) => h("th", {class: i >= 2 ? "num" : ""}, unit(c))))),
           h("tbody", {}, tenants.length ? tenants.map((t) => h("tr", {dataset: {tenant: t.name}},
               h("td", {}, t.name), h("td", {}, t.state),
               h("td", {class: "num"}, count(t.vectors_owned)), h("td", {class: "num"}, count(t.vectors_visible)),
               h("td", {class: "num"}, bytes(t.bytes_owned)),
               h("td", {class: "num"}, quota(t.max_vectors, count)), h("td", {class: "num"}, quota(t.max_bytes, bytes)),
               h("td", {class: "num"}, quota(t.max_searches_per_second, String)),
               h("td", {class: "num"}, count(t.searches)), h("td", {class: "num"}, t.search_p50_us.toFixed(0)),
               h("td", {class: "num"}, t.search_p99_us.toFixed(0))))
             : h("tr", {}, h("td", {colspan: columns.length, class: "muted"}, "No tenants."))));
}

export function tenantsPage(main, session, [selected]) {
  const state = h("div", {id: "tenants-state"});
  const select = h("select", {id: "tenants-collection", onchange: () => load()});
  const load = () => {
    if (!select.value) { mount(state, h("p", {class: "muted"}, "No collections.")); return; }
    api.get(`collections/${api.enc(select.value)}/tenants`).then(
        (answer) => mount(state, tenantTable(answer.tenants),
                          answer.more ? h("p", {class: "muted"}, "The first 1,000 tenants by name.") : null),
        (e) => mount(state, errorBox(e)));
  };
  mount(main, h("h1", {}, "Tenants"),
        h("div", {class: "card"},
          h("p", {class: "muted"}, session.tenant
              ? `This key is bound to tenant ${session.tenant}: it sees that tenant only.`
              : "Per-tenant record counts, quotas, states and search latency, per collection."),
          h("div", {class: "row"}, h("label", {}, "collection"), select),
          state));
  api.get("collections").then(({collections}) => {
    mount(select, collections.map((c) => h("option", {value: c.name}, c.name)));
    if (selected) select.value = selected;
    load();
  }, (e) => mount(state, errorBox(e)));
  return null;
}
