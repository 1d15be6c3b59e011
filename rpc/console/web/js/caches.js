// Semantic caches (DESIGN.md §6): every cache with its size; for one cache its counters per
// category and per partition, a live hit-rate chart (polled every second), and the
// category policies — editable by admin keys, each change confirmed first; other keys see the
// policies without controls. A tenant-bound key sees only its own tenant's partitions (the API
// answers nothing else).
import * as api from "./api.js";
import {h, mount, patch, bytes, count, errorBox} from "./dom.js";
import {LineChart} from "./chart.js";
import {confirmAction} from "./modal.js";

const KEEP = 180;         // chart points (three minutes)
const MAX_CATEGORIES = 4; // lines besides "all"

const percent = (rate) => (rate === null || rate === undefined ? "–" : `${(rate * 100).toFixed(1)}%`);
const ttl = (s) => (s === 0 ? "none" : s % 86400 === 0 ? `${s / 86400} d` : s % 3600 === 0 ? `${s / 3600} h` : `${s} s`);
const categoryName = (c) => (c === "" ? "(default)" : c);

function countersRow(label, c, extra = []) {
  return h("tr", {dataset: {row: label}},
           h("td", {}, label),
           [c.lookups, c.hits, c.exact_hits, c.misses].map((n) => h("td", {class: "num"}, count(n))),
           h("td", {class: "num", dataset: {test: "hit-rate"}}, percent(c.hit_rate)),
           [c.false_hit_reports, c.evicted_by_entries, c.evicted_by_bytes, c.expirations, c.invalidated,
            c.entries].map((n) => h("td", {class: "num"}, count(n))),
           h("td", {class: "num"}, bytes(c.bytes)), extra);
}

const COUNTER_COLUMNS = ["lookups", "hits", "exact", "misses", "hit rate", "false-hit reports",
                         "evicted (entries quota)", "evicted (bytes quota)", "expired", "invalidated",
                         "entries", "bytes"];

function countersTable(id, firstColumns, rows, extraColumns = []) {
  return h("table", {id, class: "counters"},
           h("thead", {}, h("tr", {}, [...firstColumns, ...COUNTER_COLUMNS, ...extraColumns].map(
               (t, i) => h("th", {class: i >= firstColumns.length ? "num" : ""}, t)))),
           h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", {colspan: 20, class: "muted"}, "Nothing yet."))));
}

// The policy editor of one category: the fields §6 names (on/off, threshold, TTL, quotas,
// eviction); the adaptive band and learning keep their values (the API changes only what it is
// sent).
function policyForm(cache, policy, onSaved, onCancel) {
  const error = errorBox();
  const field = (name, props) => h("input", {id: `policy-${name}`, ...props});
  const category = field("category", {value: policy.category, size: 12, placeholder: "(default)",
                                      disabled: policy.existing});
  const enabled = h("input", {id: "policy-enabled", type: "checkbox", checked: policy.enabled});
  const threshold = field("threshold", {type: "number", min: 0, max: 1, step: 0.01, value: policy.threshold, size: 5});
  const ttlSeconds = field("ttl", {type: "number", min: 0, step: 1, value: policy.ttl_seconds, size: 9});
  const maxEntries = field("max-entries", {type: "number", min: 0, step: 1, value: policy.max_entries, size: 9});
  const maxBytes = field("max-bytes", {type: "number", min: 0, step: 1, value: policy.max_bytes, size: 11});
  const eviction = h("select", {id: "policy-eviction"},
                     ["lru", "lfu", "fifo"].map((e) => h("option", {value: e, selected: e === policy.eviction}, e)));
  const save = async (event) => {
    event.preventDefault();
    const edit = {enabled: enabled.checked, threshold: Number(threshold.value),
                  ttl_seconds: Number(ttlSeconds.value), max_entries: Number(maxEntries.value),
                  max_bytes: Number(maxBytes.value), eviction: eviction.value};
    const changes = Object.entries(edit).filter(([k, v]) => v !== policy[k]);
    const name = category.value.trim();
    if (!changes.length && policy.existing) { error.textContent = "Nothing changed."; return; }
    const ok = await confirmAction({
      title: `Change the policy of ${categoryName(name)} in ${cache}?`,
      message: `${changes.map(([k, v]) => `${k}: ${policy[k]} → ${v}`).join(", ") || "a policy of its own"}. ` +
               "It applies at once to the category's existing entries.",
      action: "Save policy"});
    if (!ok) return;
    try {
      await api.post(`caches/${api.enc(cache)}/policy`, {category: name, policy: edit});
      onSaved();
    } catch (e) { error.textContent = e.message; }
  };
  return h("form", {class: "card", id: "policy-form", onsubmit: save},
           h("h2", {}, policy.existing ? `Policy of ${categoryName(policy.category)}` : "A policy for a new category"),
           h("div", {class: "row"},
             h("label", {}, "category"), category,
             h("label", {}, "enabled"), enabled,
             h("label", {}, "threshold (min similarity)"), threshold,
             h("label", {}, "TTL s (0 = none)"), ttlSeconds),
           h("div", {class: "row"},
             h("label", {}, "max entries (0 = no quota)"), maxEntries,
             h("label", {}, "max bytes"), maxBytes,
             h("label", {}, "eviction"), eviction,
             h("button", {class: "primary", type: "submit", id: "policy-save"}, "Save…"),
             h("button", {type: "button", id: "policy-cancel", onclick: onCancel}, "Cancel")),
           error);
}

function policiesTable(policies, session, edit) {
  const columns = ["category", "enabled", "threshold", "TTL", "max entries", "max bytes", "eviction",
                   "adaptive band", session.can_admin ? "" : null].filter((c) => c !== null);
  return h("table", {id: "cache-policies"},
           h("thead", {}, h("tr", {}, columns.map((t) => h("th", {}, t)))),
           h("tbody", {}, policies.map((p) => h("tr", {dataset: {category: p.category}},
             h("td", {}, categoryName(p.category)),
             h("td", {class: p.enabled ? "ok" : "error"}, p.enabled ? "on" : "off"),
             h("td", {class: "num"}, p.threshold),
             h("td", {}, ttl(p.ttl_seconds), p.refresh_ttl_on_hit ? " (refreshed on hit)" : ""),
             h("td", {class: "num"}, p.max_entries ? count(p.max_entries) : "–"),
             h("td", {class: "num"}, p.max_bytes ? bytes(p.max_bytes) : "–"),
             h("td", {}, p.eviction),
             h("td", {class: "muted"}, p.min_threshold === null ? "off"
                 : `≥ ${p.min_threshold} above load ${p.load_high}`),
             session.can_admin ? h("td", {}, h("button", {type: "button", dataset: {action: "edit-policy"},
                                                          onclick: () => edit({...p, existing: true})}, "Edit…"))
                               : null))));
}

// The hit rate (%) of each line ("all", then categories by name) over the last interval, from
// two samples' cumulative counters; NaN where nothing was looked up.
function rates(before, after, series) {
  const rate = (a, b) => {
    const lookups = a ? a.lookups - (b ? b.lookups : 0) : 0;
    return lookups > 0 ? (a.hits - (b ? b.hits : 0)) / lookups * 100 : NaN;
  };
  const find = (sample, name) => sample.categories_stats.find((c) => categoryName(c.category) === name);
  return series.map((name, i) => i === 0 ? rate(after.total, before.total)
                                         : rate(find(after, name), find(before, name)));
}

function cacheView(name, session) {
  const error = errorBox();
  const summary = h("div", {class: "card row", id: "cache-summary"});
  const policies = h("div");
  const editor = h("div");
  const categories = h("div");
  const partitions = h("div");
  let chart = null;
  const chartBox = h("div", {class: "charts"});
  const points = [];
  let previous = null;
  let lastPolicies = null;

  const edit = (policy) => mount(editor, policyForm(name, policy, () => { mount(editor); poll(); },
                                                    () => mount(editor)));
  const poll = async () => {
    let cache;
    try { cache = await api.get(`caches/${api.enc(name)}`); } catch (e) { error.textContent = e.message; return; }
    error.textContent = "";
    const item = (label, value, test) => h("span", {}, h("label", {}, label), h("b", {dataset: {test}}, value));
    const t = cache.total;
    patch(summary, item("dimension", cache.dimension), item("metric", cache.metric),
          item("entries", count(cache.entries), "entries"), item("bytes", bytes(cache.bytes)),
          item("lookups", count(t.lookups), "lookups"), item("hit rate", percent(t.hit_rate), "hit-rate"),
          item("exact hits", count(t.exact_hits)), item("false-hit reports", count(t.false_hit_reports)),
          cache.lookup_p50_us !== undefined ? item("lookup p50 / p99", `${cache.lookup_p50_us.toFixed(0)} / ${cache.lookup_p99_us.toFixed(0)} µs`) : null,
          cache.tenant ? h("span", {class: "muted"}, `only tenant ${cache.tenant}'s partitions`) : null);
    // Re-drawn only when they change, so a click on "Edit…" never meets a replaced button.
    const policiesJson = JSON.stringify(cache.policies);
    if (policiesJson !== lastPolicies) {
      lastPolicies = policiesJson;
      mount(policies, h("h2", {}, "Policies"),
          policiesTable(cache.policies, session, edit),
          session.can_admin ? h("div", {class: "row"}, h("button", {type: "button", id: "policy-new",
              onclick: () => edit({...cache.policies[0], category: "", existing: false})}, "New category policy…"))
                            : h("p", {class: "muted", id: "policies-read-only"}, "Changing a policy needs an admin key."));
    }
    if (!cache.tenant) {
      patch(categories, h("h2", {}, "Per category"),
            countersTable("cache-categories", ["category"],
                          cache.categories_stats.map((c) => countersRow(categoryName(c.category), c,
                              [h("td", {class: "num"}, c.threshold_offset ? `+${c.threshold_offset.toFixed(3)}` : "0"),
                               // 0: nothing learned, the policy's TTL alone applies.
                               h("td", {class: "num", dataset: {test: "learned-ttl"}},
                                 c.learned_ttl_seconds ? ttl(Math.round(c.learned_ttl_seconds)) : "—")])),
                          ["learned offset", "learned TTL"]));
    }
    const shown = cache.partitions.length < cache.partition_count ? ` (the busiest ${cache.partitions.length} of ${count(cache.partition_count)})` : "";
    patch(partitions, h("h2", {}, `Per partition${shown}`),
          countersTable("cache-partitions", ["tenant", "model", "params", "context"],
                        cache.partitions.map((p) => {
                          const row = countersRow(p.tenant || "(none)", p.counters);
                          row.children[0].after(h("td", {}, p.model), h("td", {class: "mono"}, p.params_fingerprint),
                                                h("td", {class: "mono"}, p.context_hash));
                          row.dataset.tenant = p.tenant;
                          return row;
                        })));
    if (!chart) {
      const series = ["all", ...cache.categories_stats.slice(0, MAX_CATEGORIES).map((c) => categoryName(c.category))];
      chart = new LineChart("Hit rate (per second)", series, "%");
      mount(chartBox, chart.element);
    }
    if (previous) {
      points.push({t: Date.now(), values: rates(previous, cache, chart.series)});
      if (points.length > KEEP) points.shift();
    }
    chart.draw(points);
    chartBox.dataset.points = points.filter((p) => Number.isFinite(p.values[0])).length;
    previous = cache;
  };
  const element = h("div", {id: "cache-view"}, h("h2", {}, `Cache ${name}`), error, summary, chartBox,
                    policies, editor, categories, partitions);
  poll();
  const timer = setInterval(poll, 1000);
  return {element, stop: () => clearInterval(timer)};
}

export function cachesPage(main, session, [selected]) {
  const body = h("tbody");
  const error = errorBox();
  const view = h("div");
  let stopView = null;
  let left = false;
  mount(main, h("h1", {}, "Caches"),
        session.tenant ? h("p", {class: "muted"}, `Entries and counters of tenant ${session.tenant}'s partitions only.`) : null,
        error,
        h("table", {id: "caches"},
          h("thead", {}, h("tr", {}, ["name", "dim", "metric", "entries", "bytes", "categories with a policy"].map(
              (t, i) => h("th", {class: [1, 3, 4].includes(i) ? "num" : ""}, t)))),
          body),
        view);
  api.get("caches").then(({caches}) => {
    mount(body, caches.length ? caches.map((c) => h("tr", {dataset: {cache: c.name}},
        h("td", {}, h("a", {href: `#/caches/${encodeURIComponent(c.name)}`}, c.name)),
        h("td", {class: "num"}, c.dimension), h("td", {}, c.metric),
        h("td", {class: "num"}, count(c.entries)), h("td", {class: "num"}, bytes(c.bytes)),
        h("td", {}, c.categories.join(", ") || "–")))
      : h("tr", {}, h("td", {colspan: 6, class: "muted"}, "No caches.")));
    const name = selected || (caches[0] && caches[0].name);
    if (!name || left) return;
    const shown = cacheView(name, session);
    stopView = shown.stop;
    mount(view, shown.element);
  }, (e) => { error.textContent = e.message; });
  return () => { left = true; if (stopView) stopView(); };
}
