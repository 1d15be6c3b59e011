// Index builds started from the console, with live progress (polled twice a second); admins
// start new ones.
import * as api from "./api.js";
import {h, mount, patch, errorBox} from "./dom.js";

function buildRow(build) {
  const percent = Math.round(build.fraction * 100);
  const fill = h("div");
  fill.style.width = `${percent}%`;  // CSSOM: allowed by the page's Content-Security-Policy
  const state = build.done ? (build.error ? h("span", {class: "error"}, `${build.error.code}: ${build.error.message}`)
                                          : h("span", {class: "ok"}, "done"))
                           : h("span", {}, build.phase);
  return h("tr", {dataset: {build: build.id, done: build.done ? "1" : "0", failed: build.error ? "1" : "0"}},
           h("td", {class: "num"}, build.id),
           h("td", {}, build.collection),
           h("td", {class: "mono"}, build.spec),
           h("td", {}, h("div", {class: "bar"}, fill), `${percent}%`),
           h("td", {}, state),
           h("td", {class: "num"}, `${build.elapsed_seconds.toFixed(1)} s`),
           h("td", {}, build.started_by));
}

export function buildsPage(main, session) {
  const body = h("tbody");
  const error = errorBox();
  const collection = h("select", {id: "build-collection"});
  const spec = h("input", {id: "build-spec", value: "spann", size: 50});
  const start = async (event) => {
    event.preventDefault();
    try {
      await api.post(`collections/${api.enc(collection.value)}/build`, {spec: spec.value.trim()});
      error.textContent = "";
      poll();
    } catch (e) { error.textContent = e.message; }
  };
  const poll = async () => {
    try {
      const {builds} = await api.get("builds");
      patch(body, builds.length ? builds.map(buildRow)
                                : h("tr", {}, h("td", {colspan: 7, class: "muted"}, "No builds started from this console yet.")));
    } catch (e) { error.textContent = e.message; }
  };
  mount(main, h("h1", {}, "Index builds"),
        session.can_admin
            ? h("form", {class: "card row", id: "build-form", onsubmit: start},
                h("b", {}, "Build an index"), h("label", {}, "collection"), collection,
                h("label", {}, "spec"), spec,
                h("button", {class: "primary", type: "submit", id: "build"}, "Start build"),
                h("span", {class: "muted"}, "e.g. spann, spann:centroid_ratio=0.02,replicas=4, flat"))
            : h("p", {class: "muted"}, "Starting a build needs an admin key."),
        error,
        h("table", {id: "builds"},
          h("thead", {}, h("tr", {}, ["#", "collection", "spec", "progress", "state", "elapsed", "by"].map((t) => h("th", {}, t)))),
          body));
  if (session.can_admin) {
    api.get("collections").then(({collections}) => {
      mount(collection, collections.map((c) => h("option", {value: c.name}, c.name)));
    }, (e) => { error.textContent = e.message; });
  }
  poll();
  const timer = setInterval(poll, 500);
  return () => clearInterval(timer);
}
