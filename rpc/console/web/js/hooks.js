// Pages for parts of Shoal still being built: tenants (DESIGN.md §5) and the semantic cache
// (§6). Each asks its API (GET /api/tenants, /api/caches), which answers UNIMPLEMENTED until
// the engine lands; the page then says so. When they land: fill these in (per-tenant counts and
// quotas; per-category hit rates, thresholds and evictions) and have the API answer.
import * as api from "./api.js";
import {h, mount, errorBox} from "./dom.js";

function hookPage(title, path, what) {
  return (main) => {
    const state = h("p", {class: "muted", id: `${path}-state`}, "loading…");
    mount(main, h("h1", {}, title), h("div", {class: "card hook"}, h("p", {}, what), state));
    api.get(path).then(
        (answer) => mount(state, h("pre", {class: "mono"}, JSON.stringify(answer, null, 2))),
        (e) => {
          if (e.code === "UNIMPLEMENTED") mount(state, "Not built yet in this shoald: this page fills in when it lands.");
          else mount(state, errorBox(e));
        });
    return null;
  };
}

export const tenantsPage = hookPage("Tenants", "tenants",
    "Per-tenant record counts, quotas and states, per collection.");
export const cachesPage = hookPage("Caches", "caches",
    "Semantic cache categories: hit rate, thresholds, TTLs, evictions by reason.");
