// The console's shell: sign-in, navigation (#/page/arg), and the session every page reads
// (who the key is and what it may do: a read-only key gets a read-only console, a tenant-bound
// key a console of its tenant without the pages that act on whole collections).
import * as api from "./api.js";
import {h, mount, errorBox} from "./dom.js";
import {collectionsPage} from "./collections.js";
import {collectionPage} from "./collection.js";
import {searchPage} from "./search.js";
import {buildsPage} from "./builds.js";
import {snapshotsPage} from "./snapshots.js";
import {metricsPage} from "./metrics.js";
import {tenantsPage} from "./tenants.js";
import {cachesPage} from "./caches.js";

const PAGES = {
  collections: collectionsPage,
  collection: collectionPage,
  search: searchPage,
  builds: buildsPage,
  snapshots: snapshotsPage,
  metrics: metricsPage,
  tenants: tenantsPage,
  caches: cachesPage,
};

let session = null;
let stopPage = null;  // the current page's cleanup (timers)

function showLogin(message) {
  session = null;
  if (stopPage) stopPage();
  stopPage = null;
  document.getElementById("nav").hidden = true;
  document.getElementById("logout").hidden = true;
  document.getElementById("who").textContent = "";
  const input = h("input", {type: "password", id: "key", autocomplete: "off", size: 40,
                            placeholder: "API key"});
  const submit = async (event) => {
    event.preventDefault();
    api.setKey(input.value.trim());
    input.value = "";
    await start();
  };
  mount(document.getElementById("main"),
        h("form", {class: "card login", id: "login-form", onsubmit: submit},
          h("h1", {}, "Sign in to shoald"),
          h("p", {class: "muted"},
            "This server needs an API key (the same keys as its gRPC API). The key is kept in ",
            "this tab only and is never shown."),
          h("div", {class: "row"}, input, h("button", {class: "primary", id: "login", type: "submit"}, "Sign in")),
          message ? errorBox(message) : null));
  input.focus();
}

function route() {
  if (!session) return;
  if (stopPage) stopPage();
  stopPage = null;
  const [name, ...args] = (location.hash.replace(/^#\/?/, "") || "collections").split("/");
  const page = PAGES[name] || collectionsPage;
  for (const link of document.querySelectorAll("#nav a")) {
    const active = link.dataset.page === name || (name === "collection" && link.dataset.page === "collections");
    link.classList.toggle("active", active);
  }
  const main = document.getElementById("main");
  mount(main);
  stopPage = page(main, session, args.map(decodeURIComponent)) || null;
}

async function start() {
  try {
    session = await api.get("session");
  } catch (error) {
    // 401: no key or an unknown one (forgotten at once). Nothing else is shown.
    const tried = api.hasKey();
    if (error.status === 401) api.setKey(null);
    showLogin(tried ? error : null);
    return;
  }
  document.getElementById("nav").hidden = false;
  document.getElementById("logout").hidden = !session.authenticates;
  const bound = Boolean(session.tenant);
  for (const page of ["builds", "snapshots"]) {
    document.querySelector(`#nav a[data-page="${page}"]`).hidden = bound;
  }
  document.getElementById("who").textContent =
      !session.authenticates ? "no authentication (loopback)"
      : bound ? `${session.name} (${session.role}, tenant ${session.tenant})`
      : `${session.name} (${session.role})`;
  document.body.dataset.role = session.role;
  document.body.dataset.tenant = session.tenant || "";
  route();
}

api.setUnauthenticatedHandler((error) => showLogin(error));
window.addEventListener("hashchange", route);
document.getElementById("logout").addEventListener("click", () => {
  api.setKey(null);
  showLogin(null);
});
start();
