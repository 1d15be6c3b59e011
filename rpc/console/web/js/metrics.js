// Live charts of the server's own metrics (the registry behind --metrics-listen), polled every
// second: request rate and errors, latency percentiles, WAL syncs, rejections by reason.
// Rates and percentiles are over each one-second interval (differences of cumulative counts).
import * as api from "./api.js";
import {h, mount, errorBox} from "./dom.js";
import {LineChart} from "./chart.js";

const KEEP = 180;  // points (seconds) shown

// The q-quantile (0..1) of the latencies between two cumulative histograms, in ms, linearly
// interpolated inside its bucket; NaN when nothing happened.
export function percentile(bounds, before, after, q) {
  const counts = after.map((c, i) => c - (before ? before[i] : 0));
  const total = counts[counts.length - 1];
  if (!(total > 0)) return NaN;
  const target = q * total;
  for (let i = 0; i < counts.length; i++) {
    if (counts[i] >= target) {
      const lo = i === 0 ? 0 : bounds[i - 1];
      if (bounds[i] === null) return lo * 1000;  // the +inf bucket: its lower bound
      const below = i === 0 ? 0 : counts[i - 1];
      const inside = counts[i] - below;
      const fraction = inside > 0 ? (target - below) / inside : 1;
      return (lo + (bounds[i] - lo) * fraction) * 1000;
    }
  }
  return NaN;
}

export function metricsPage(main) {
  const charts = {
    qps: new LineChart("Requests per second", ["requests", "errors"], ""),
    latency: new LineChart("Latency", ["p50", "p95", "p99"], " ms"),
    wal: new LineChart("WAL syncs", ["syncs/s", "mean ms"], ""),
    rejections: new LineChart("Rejections per second", ["unauthenticated", "permission_denied", "rate_limited", "message_too_large", "other"], ""),
  };
  const points = {qps: [], latency: [], wal: [], rejections: []};
  const error = errorBox();
  const totals = h("div", {class: "card row", id: "metric-totals"});
  let previous = null;

  const push = (name, t, values) => {
    points[name].push({t, values});
    if (points[name].length > KEEP) points[name].shift();
    charts[name].draw(points[name]);
  };
  const poll = async () => {
    try {
      const sample = await api.get("metrics");
      const t = sample.unix_millis;
      if (previous) {
        const dt = Math.max(0.001, (t - previous.unix_millis) / 1000);
        const rate = (a, b) => ((a || 0) - (b || 0)) / dt;
        push("qps", t, [rate(sample.rpcs, previous.rpcs), rate(sample.rpc_errors, previous.rpc_errors)]);
        push("latency", t, [0.5, 0.95, 0.99].map((q) => percentile(sample.latency_bounds, previous.latency_counts, sample.latency_counts, q)));
        const syncs = sample.wal_syncs - previous.wal_syncs;
        push("wal", t, [syncs / dt, syncs > 0 ? (sample.wal_sync_seconds - previous.wal_sync_seconds) / syncs * 1000 : NaN]);
        const known = charts.rejections.series.slice(0, 4);
        const other = Object.entries(sample.rejections).filter(([k]) => !known.includes(k))
                          .reduce((sum, [k, v]) => sum + v - (previous.rejections[k] || 0), 0);
        push("rejections", t, [...known.map((k) => rate(sample.rejections[k], previous.rejections[k])), other / dt]);
      }
      previous = sample;
      mount(totals,
            h("span", {}, h("label", {}, "requests since start"), h("b", {dataset: {test: "rpcs"}}, sample.rpcs)),
            h("span", {}, h("label", {}, "errors"), h("b", {}, sample.rpc_errors)),
            h("span", {}, h("label", {}, "WAL syncs"), h("b", {}, sample.wal_syncs)),
            h("span", {}, h("label", {}, "ingested records"), h("b", {}, sample.ingested_records)),
            h("span", {}, h("label", {}, "index builds running"), h("b", {}, sample.builds_in_progress)));
      error.textContent = "";
    } catch (e) { error.textContent = e.message; }
  };
  mount(main, h("h1", {}, "Metrics"), totals, error,
        h("div", {class: "charts", id: "charts"}, Object.values(charts).map((c) => c.element)));
  for (const [name, chart] of Object.entries(charts)) chart.draw(points[name]);
  poll();
  const timer = setInterval(poll, 1000);
  return () => clearInterval(timer);
}
