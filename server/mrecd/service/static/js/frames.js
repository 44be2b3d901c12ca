// Frame view: frame i as a 3D molecule. The slider fetches only the frame it
// points at (MRF1, viewed in place); a newer move aborts the fetch in flight.
// Each drawn frame is announced by a "frame-drawn" event (the browser tests
// time input → drawn frame with it).
import { ApiError, follow, getJSON, request } from "./api.js";
import { h, num } from "./dom.js";
import { decodeFrame } from "./mrf1.js";
import { MoleculeView, elementsOf } from "./viewer.js";

const FRAME = "application/x-mrec-frame";

export async function showFrames({ root, signal }, source, index) {
  const { nstep, system } = await source.load(signal);
  const molecule = h("div", { class: "molecule", id: "molecule" });
  const slider = h("input", { type: "range", class: "slider", id: "slider", min: 0, max: Math.max(0, nstep - 1), value: Math.min(index, Math.max(0, nstep - 1)) });
  const label = h("span", { id: "frame-label" });
  const facts = h("dl", { class: "facts", id: "facts" });
  root.append(
    h("h1", {}, source.title),
    h("div", { class: "toolbar" }, h("a", { href: source.back }, "back"), label),
    h("div", { class: "frame-layout" },
      h("div", {}, molecule, slider),
      facts));
  if (!nstep) {
    label.textContent = "no frames yet";
    return;
  }
  const view = await MoleculeView.create(molecule);
  signal.addEventListener("abort", () => view.destroy());
  const systemElements = elementsOf(system?.blocks?.atoms?.columns);

  let inFlight = null;
  const load = async (i, startedAt) => {
    inFlight?.abort();
    const mine = new AbortController();
    inFlight = mine;
    const either = AbortSignal.any([signal, mine.signal]); // leaving the view, or a newer move
    try {
      const response = await request(source.frame(i), { accept: FRAME, signal: either });
      const frame = decodeFrame(await response.arrayBuffer());
      const fetched = performance.now();
      const atoms = frame.blocks.atoms?.columns ?? {};
      if (!atoms.x || !atoms.y || !atoms.z) throw new Error(`frame ${i} has no atoms x, y, z`);
      view.show({ ...atoms, elements: elementsOf(atoms) ?? systemElements }, frame.box);
      describe(facts, i, frame);
      label.textContent = `frame ${i} of ${slider.max}`;
      history.replaceState(null, "", source.hash(i));
      requestAnimationFrame(() => {
        molecule.dataset.drawn = String(i);
        window.dispatchEvent(new CustomEvent("frame-drawn", {
          detail: { index: i, ms: performance.now() - startedAt, fetchMs: fetched - startedAt },
        }));
      });
    } catch (error) {
      if (either.aborted) return;
      throw error instanceof ApiError ? error : new Error(`frame ${i}: ${error.message}`);
    }
  };

  slider.addEventListener("input", () => {
    load(Number(slider.value), performance.now()).catch((e) => { facts.textContent = e.message; });
  });
  await load(Number(slider.value), performance.now());
  if (source.events) {
    follow(source.events, {
      signal,
      onCommit: ({ nstep: now }) => {
        slider.max = String(now - 1);
        label.textContent = `frame ${slider.value} of ${slider.max}`;
      },
    });
  }
}

function describe(facts, i, frame) {
  const rows = [["frame", i], ["step", frame.step], ["time", frame.time],
    ["atoms", frame.blocks.atoms?.count]];
  for (const [key, value] of Object.entries(frame.meta ?? {})) rows.push([key, value]);
  if (frame.box?.cell_defined) {
    const m = frame.box.vectors;
    rows.push(["cell", [0, 1, 2].map((j) => `(${[0, 1, 2].map((r) => num(Number(m[r][j]))).join(", ")})`).join(" ")]);
  }
  facts.replaceChildren(...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, typeof v === "object" ? JSON.stringify(v) : num(v))]));
}

/** A record's trajectory: nstep and system from its summary (system only if present). */
export function recordFrames(name) {
  const base = `/v1/records/${encodeURIComponent(name)}`;
  return {
    title: name,
    back: `#/records/${encodeURIComponent(name)}`,
    hash: (i) => `#/records/${encodeURIComponent(name)}/frames/${i}`,
    frame: (i) => `${base}/trajectory/frames/${i}`,
    events: `${base}/trajectory/events`,
    async load(signal) {
      const summary = await getJSON(base, { signal });
      const system = summary.sections.includes("system")
        ? await getJSON(`${base}/system`, { signal }) : null;
      return { nstep: summary.nstep, system };
    },
  };
}

/** Record r of a collection: its frame count from the index, its system from the record. */
export function collectionFrames(name, r) {
  const base = `/v1/collections/${encodeURIComponent(name)}`;
  return {
    title: `${name} · record ${r}`,
    back: `#/collections/${encodeURIComponent(name)}`,
    hash: (i) => `#/collections/${encodeURIComponent(name)}/records/${r}/frames/${i}`,
    frame: (i) => `${base}/records/${r}/frames/${i}`,
    events: null, // a collection grows by whole records: nothing to follow
    async load(signal) {
      const index = await getJSON(`${base}/index`, { signal });
      const nFrames = index.columns.n_frames.values[r];
      const record = await getJSON(`${base}/records/${r}`, { signal });
      return { nstep: Number(nFrames ?? 0), system: record.system };
    },
  };
}
