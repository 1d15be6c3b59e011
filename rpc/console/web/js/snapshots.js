// Snapshots in the server's --snapshot-dir: list, create, and restore (which replaces the whole
// database, so it asks for the snapshot's name to be typed). Admin keys only, as over gRPC.
import * as api from "./api.js";
import {h, mount, bytes, count, errorBox} from "./dom.js";
import {confirmAction} from "./modal.js";

export function snapshotsPage(main, session) {
  const body = h("tbody");
  const error = errorBox();
  const status = h("div", {class: "ok", id: "snapshot-status"});
  const name = h("input", {id: "snapshot-name", placeholder: "name (optional)", size: 30});
  const reload = async () => {
    try {
      const answer = await api.get("snapshots");
      if (!answer.enabled) {
        mount(body, h("tr", {}, h("td", {colspan: 5, class: "muted"}, "Snapshots are off: start shoald with --snapshot-dir.")));
        return;
      }
      mount(body, answer.snapshots.length ? answer.snapshots.map(row)
                                          : h("tr", {}, h("td", {colspan: 5, class: "muted"}, "No snapshots yet.")));
    } catch (e) { error.textContent = e.message; }
  };
  const restore = async (snapshot) => {
    const ok = await confirmAction({
      title: `Restore ${snapshot.name}?`,
      message: "This replaces the whole database with the snapshot: every write since it was taken is lost. Requests wait while it runs.",
      action: "Restore", typed: snapshot.name});
    if (!ok) return;
    try {
      await api.post(`snapshots/${api.enc(snapshot.name)}/restore`);
      status.textContent = `Restored ${snapshot.name}.`;
      error.textContent = "";
    } catch (e) { error.textContent = e.message; }
  };
  const row = (snapshot) =>
      h("tr", {dataset: {snapshot: snapshot.name}},
        h("td", {}, snapshot.name),
        h("td", {}, new Date(snapshot.created_unix_seconds * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC"),
        h("td", {class: "num"}, count(snapshot.files)),
        h("td", {class: "num"}, bytes(snapshot.bytes)),
        h("td", {}, h("button", {class: "danger", type: "button", dataset: {action: "restore"}, onclick: () => restore(snapshot)}, "Restore…")));
  const create = async (event) => {
    event.preventDefault();
    try {
      const made = await api.post("snapshots", {name: name.value.trim()});
      status.textContent = `Snapshot ${made.name} written (${bytes(made.bytes)}).`;
      name.value = "";
      error.textContent = "";
      reload();
    } catch (e) { error.textContent = e.message; }
  };
  if (!session.can_admin) {
    mount(main, h("h1", {}, "Snapshots"), h("p", {class: "muted", id: "snapshots-denied"}, "Snapshots need an admin key."));
    return null;
  }
  mount(main, h("h1", {}, "Snapshots"),
        h("form", {class: "card row", id: "snapshot-form", onsubmit: create},
          h("b", {}, "New snapshot"), name, h("button", {class: "primary", type: "submit", id: "snapshot"}, "Create snapshot")),
        status, error,
        h("table", {id: "snapshots"},
          h("thead", {}, h("tr", {}, ["name", "created", "files", "bytes", ""].map((t) => h("th", {}, t)))),
          body));
  reload();
  return null;
}
