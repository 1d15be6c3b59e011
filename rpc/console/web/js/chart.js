// A small line chart on a canvas: series of numbers over the same times, y from 0.
import {h} from "./dom.js";

export const COLORS = ["#1f6feb", "#e36209", "#2e7d32", "#8250df", "#c62828", "#6a7280"];

export class LineChart {
  // `series`: names, drawn in COLORS order; `unit` is appended to the y labels.
  constructor(title, series, unit) {
    this.series = series;
    this.unit = unit;
    this.canvas = h("canvas", {width: 600, height: 180});
    this.values = h("div", {class: "legend"});
    this.element = h("div", {class: "card chart", dataset: {chart: title}}, h("h2", {}, title), this.canvas, this.values);
  }

  // `points`: [{t, values: [..]}] oldest first.
  draw(points) {
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 600, height = canvas.clientHeight || 180;
    canvas.width = width * ratio;
    canvas.height = height * ratio;
    const g = canvas.getContext("2d");
    g.scale(ratio, ratio);
    g.clearRect(0, 0, width, height);
    const left = 56, bottom = height - 18, top = 8, right = width - 8;
    let max = 0;
    for (const p of points) for (const v of p.values) if (Number.isFinite(v)) max = Math.max(max, v);
    max = max > 0 ? max * 1.15 : 1;
    g.strokeStyle = "#d9dde3";
    g.fillStyle = "#6a7280";
    g.font = "11px system-ui, sans-serif";
    for (let i = 0; i <= 4; i++) {
      const y = bottom - (bottom - top) * i / 4;
      g.beginPath(); g.moveTo(left, y); g.lineTo(right, y); g.stroke();
      g.fillText(`${+(max * i / 4).toPrecision(3)}${this.unit}`, 2, y + 4);
    }
    if (points.length >= 1) {
      const t0 = points[0].t, t1 = points[points.length - 1].t;
      const x = (t) => left + (right - left) * (t - t0) / Math.max(1, t1 - t0);
      g.fillText(`${Math.round((t1 - t0) / 1000)} s`, left, height - 4);
      this.series.forEach((name, s) => {
        g.strokeStyle = COLORS[s % COLORS.length];
        g.lineWidth = 1.5;
        g.beginPath();
        let started = false;
        for (const p of points) {
          const v = p.values[s];
          if (!Number.isFinite(v)) { started = false; continue; }
          const y = bottom - (bottom - top) * v / max;
          if (started) g.lineTo(x(p.t), y); else g.moveTo(x(p.t), y);
          started = true;
        }
        g.stroke();
        // A point without neighbours on the line (the first one, or one between gaps) as a dot.
        g.fillStyle = COLORS[s % COLORS.length];
        points.forEach((p, i) => {
          const v = p.values[s];
          const alone = (j) => j < 0 || j >= points.length || !Number.isFinite(points[j].values[s]);
          if (Number.isFinite(v) && alone(i - 1) && alone(i + 1)) {
            g.beginPath();
            g.arc(x(p.t), bottom - (bottom - top) * v / max, 2.5, 0, 2 * Math.PI);
            g.fill();
          }
        });
      });
    }
    const last = points.length ? points[points.length - 1].values : [];
    this.values.replaceChildren(...this.series.map((name, s) => {
      const swatch = h("i");
      swatch.style.background = COLORS[s % COLORS.length];
      const v = last[s];
      return h("span", {dataset: {series: name}}, swatch, `${name}: ${Number.isFinite(v) ? `${+v.toPrecision(4)}${this.unit}` : "–"}`);
    }));
  }
}
