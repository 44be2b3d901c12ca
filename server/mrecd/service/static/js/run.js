// Run view: one uPlot chart per declared numeric meta key (pe, ke, temperature
// first), x on step or time, cursors and zoom shared; each commit announced by
// the events stream fetches only the new points ([have, nstep)) of each series.
import { enc, follow, getJSON } from "./api.js";
import { h, num } from "./dom.js";

const FIRST = ["pe", "ke", "temperature"];
const NUMERIC = new Set(["f64", "f32", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]);

export function plottedKeys(declaration) {
  const meta = declaration?.meta ?? {};
  const keys = Object.keys(meta).filter((k) => NUMERIC.has(meta[k].dtype) && !meta[k].trailing?.length);
  const rank = (k) => (FIRST.includes(k) ? FIRST.indexOf(k) : FIRST.length);
  return keys.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

export async function showRun({ root, signal }, name) {
  const base = `/v1/records/${enc(name)}`;
  const summary = await getJSON(base, { signal });
  const keys = plottedKeys(summary.declaration);
  const axis = sessionStorage.getItem("mrecd.axis") === "time" ? "time" : "step";
  const nstepText = h("span", { id: "nstep" }, num(summary.nstep));
  const charts = h("div", { class: "charts", id: "charts" });
  const switcher = h("div", { class: "toolbar" },
    h("span", {}, "x axis:"),
    ...["step", "time"].map((value) => h("label", {},
      h("input", { type: "radio", name: "axis", value, checked: value === axis }), ` ${value}`)),
    h("span", { class: "muted" }, "drag to zoom, double-click to reset"));
  root.append(
    h("h1", {}, name),
    h("div", { class: "toolbar" },
      h("span", {}, "frames: ", nstepText),
      summary.nstep ? h("a", { href: `#/records/${enc(name)}/frames/${summary.nstep - 1}` }, "view frames") : null,
      summary.sections.includes("forcefield") ? h("a", { href: `#/forcefield/records/${enc(name)}` }, "force field") : null),
    switcher, charts);
  if (!keys.length) {
    charts.append(h("p", { class: "muted" }, "No per-step numeric meta declared for this run."));
    return;
  }

  const series = new Map(keys.map((k) => [k, { steps: [], times: [], values: [] }]));
  let have = 0;
  let plots = [];
  let current = axis;
  let zoomed = false;

  const fetchFrom = async (start, stop) => {
    const parts = await Promise.all(keys.map((k) =>
      getJSON(`${base}/trajectory/series/${enc(k)}?start=${start}&stop=${stop}`, { signal })));
    parts.forEach((part, n) => {
      const s = series.get(keys[n]);
      s.steps.push(...part.steps);
      s.times.push(...(part.times ?? part.steps.map(() => null)));
      s.values.push(...part.values.map((v) => (typeof v === "number" ? v : null)));
    });
    return parts[0].stop;
  };

  const xOf = (s) => (current === "time" ? s.times : s.steps);
  const build = () => {
    plots.forEach((p) => p.destroy());
    charts.replaceChildren();
    const width = Math.max(320, charts.clientWidth - 12);
    plots = keys.map((key) => {
      const holder = h("div", { class: "chart", dataset: { key, points: String(have) } });
      charts.append(holder);
      const s = series.get(key);
      return new uPlot({
        width, height: 200, title: key,
        scales: { x: { time: false } },
        cursor: { sync: { key: `run-${name}`, setSeries: true }, drag: { x: true, y: false } },
        axes: [{ label: current }, {}],
        series: [{ label: current }, { label: key, stroke: "#1f6feb", width: 1.5, points: { show: false } }],
        hooks: {
          setSelect: [(u) => { if (u.select.width > 0) zoomed = true; }],
          setScale: [(u, scale) => { if (scale === "x") syncX(u); }],
        },
      }, [xOf(s), s.values], holder);
    });
    for (const p of plots) p.over.addEventListener("dblclick", () => { zoomed = false; });
    window.mrecdPlots = plots; // for the browser tests and a curious user's console
  };

  let syncing = false;
  const syncX = (source) => {
    if (syncing) return;
    syncing = true;
    const { min, max } = source.scales.x;
    for (const p of plots) if (p !== source) p.setScale("x", { min, max });
    syncing = false;
  };

  const redraw = () => {
    plots.forEach((p, n) => {
      const s = series.get(keys[n]);
      p.setData([xOf(s), s.values], !zoomed);
      p.root.parentElement.dataset.points = String(s.values.length);
    });
  };

  have = await fetchFrom(0, summary.nstep);
  const timeless = have > 0 && series.get(keys[0]).times.every((t) => t === null);
  if (timeless) {
    current = "step";
    for (const input of switcher.querySelectorAll("input")) input.disabled = input.value === "time";
  }
  build();
  switcher.addEventListener("change", (event) => {
    current = event.target.value;
    sessionStorage.setItem("mrecd.axis", current);
    zoomed = false;
    build();
  });

  // commits arrive faster than series reads at times: one read in flight, then catch up
  let wanted = have;
  let reading = false;
  const catchUp = async () => {
    if (reading) return;
    reading = true;
    try {
      while (wanted > have && !signal.aborted) {
        have = await fetchFrom(have, wanted);
        nstepText.textContent = num(have);
        redraw();
      }
    } finally {
      reading = false;
    }
  };
  follow(`${base}/trajectory/events`, {
    signal,
    onCommit: ({ nstep }) => {
      wanted = Math.max(wanted, nstep);
      catchUp().catch(() => {});
    },
  });
}
