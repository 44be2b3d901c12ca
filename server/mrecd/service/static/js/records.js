// Records list: name-prefix filter, pages of 50, each row's summary; live rows
// follow their events stream (at most FOLLOWED at once, under the browser's six
// connections per origin) and refresh their summary on each commit.
import { enc, follow, getJSON, pooled } from "./api.js";
import { collectionTable } from "./collections.js";
import { bytes, h, num } from "./dom.js";

const PAGE = 50;
const FOLLOWED = 3;
const RELIST_MS = 10000;

export async function showRecords({ root, signal }) {
  const filter = h("input", { type: "search", id: "filter", placeholder: "name prefix", size: 24 });
  filter.value = sessionStorage.getItem("mrecd.filter") ?? "";
  const body = h("tbody", { id: "records" });
  const more = h("button", { type: "button", hidden: true }, "More");
  const count = h("span", { class: "muted" });
  const collections = h("div", { id: "home-collections" });
  root.append(
    h("h1", {}, "Records"),
    h("div", { class: "toolbar" }, h("label", {}, "Filter ", filter), count),
    h("table", {},
      h("thead", {}, h("tr", {},
        ["name", "frames", "last step", "last time", "size", "state", ""].map((t, i) =>
          h("th", { class: i >= 1 && i <= 4 ? "num" : null }, t)))),
      body),
    h("div", { class: "pager" }, more),
    h("h2", {}, "Collections"),
    collections,
  );

  const rows = new Map();
  let cursor = null;
  let listing = new AbortController();
  const following = new Map();
  signal.addEventListener("abort", () => listing.abort());

  const load = async (reset) => {
    if (reset) {
      listing.abort();
      listing = new AbortController(); // the view's abort listener aborts the current one
      for (const stream of following.values()) stream.abort();
      following.clear();
      rows.clear();
      body.replaceChildren();
      cursor = null;
      // the same filter lists the collections (a server without them: the section says so)
      collectionTable(filter.value, listing.signal)
        .then((t) => collections.replaceChildren(t))
        .catch((e) => { if (e.name !== "AbortError") collections.textContent = e.message; });
    }
    const query = new URLSearchParams({ prefix: filter.value, limit: PAGE });
    if (cursor) query.set("cursor", cursor);
    const page = await getJSON(`/v1/records?${query}`, { signal: listing.signal });
    cursor = page.next;
    more.hidden = !page.next;
    const fresh = page.records.filter((name) => !rows.has(name));
    for (const name of fresh) rows.set(name, addRow(body, name));
    count.textContent = `${rows.size} shown`;
    await pooled(fresh, 4, (name) => refresh(name, listing.signal).catch(rowFailed(name)));
  };

  const refresh = async (name, scope) => {
    const row = rows.get(name);
    if (!row) return;
    const summary = await getJSON(`/v1/records/${enc(name)}`, { signal: scope });
    fillRow(row, summary);
    if (summary.live && !following.has(name) && following.size < FOLLOWED) watch(name, scope);
    if (summary.live === false && following.has(name)) following.get(name).abort(); // frees a slot
  };

  const watch = (name, scope) => {
    const stream = new AbortController();
    scope.addEventListener("abort", () => stream.abort());
    following.set(name, stream);
    let pending = null;
    follow(`/v1/records/${enc(name)}/trajectory/events`, {
      signal: stream.signal,
      onCommit: ({ nstep }) => {
        const row = rows.get(name);
        if (row) { row.nstep.textContent = num(nstep); markLive(row, true); }
        pending ??= setTimeout(() => { pending = null; refresh(name, stream.signal).catch(() => {}); }, 500);
      },
    }).finally(() => { if (following.get(name) === stream) following.delete(name); });
  };

  let typing = null;
  filter.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      sessionStorage.setItem("mrecd.filter", filter.value);
      load(true).catch(report);
    }, 250);
  });
  more.addEventListener("click", () => load(false).catch(report));
  const relist = setInterval(() => { if (!document.hidden) newNames().catch(() => {}); }, RELIST_MS);
  signal.addEventListener("abort", () => clearInterval(relist));

  // now and then: new runs appear (the first page is listed again) and the rows
  // no event stream follows are read again (a run that started or stopped meanwhile)
  const newNames = async () => {
    const query = new URLSearchParams({ prefix: filter.value, limit: PAGE });
    const page = await getJSON(`/v1/records?${query}`, { signal: listing.signal });
    const fresh = page.records.filter((name) => !rows.has(name));
    for (const name of fresh) rows.set(name, addRow(body, name));
    const stale = [...rows.keys()].filter((name) => !following.has(name) && !fresh.includes(name));
    await pooled([...fresh, ...stale], 2, (name) => refresh(name, listing.signal).catch(rowFailed(name)));
  };

  // one record failing (deleted meanwhile, a refused prefix) marks its row, not the list
  const rowFailed = (name) => (error) => {
    const row = rows.get(name);
    if (!row || error.name === "AbortError") return;
    row.state.textContent = error.status ? `error ${error.status}` : "error";
    row.state.className = "closed";
    row.state.title = error.message;
  };

  function report(error) {
    if (!signal.aborted && error.name !== "AbortError") throw error;
  }
  await load(true).catch(report);
}

function addRow(body, name) {
  const cells = {
    nstep: h("td", { class: "num" }, "…"),
    lastStep: h("td", { class: "num" }),
    lastTime: h("td", { class: "num" }),
    size: h("td", { class: "num" }),
    state: h("td"),
  };
  const frames = h("a", { href: `#/records/${enc(name)}/frames/0`, hidden: true }, "frames");
  const tr = h("tr", { dataset: { name } },
    h("td", {}, h("a", { href: `#/records/${enc(name)}` }, name)),
    cells.nstep, cells.lastStep, cells.lastTime, cells.size, cells.state, h("td", {}, frames));
  body.append(tr);
  return { tr, frames, ...cells };
}

function fillRow(row, summary) {
  row.nstep.textContent = num(summary.nstep);
  row.lastStep.textContent = num(summary.last_step);
  row.lastTime.textContent = num(summary.last_time);
  row.size.textContent = bytes(summary.size);
  row.frames.hidden = !summary.nstep;
  markLive(row, summary.live === true, summary.live === null);
}

function markLive(row, live, unknown = false) {
  row.state.textContent = live ? "live" : unknown ? "–" : "closed";
  row.state.className = live ? "live" : "closed";
  row.tr.dataset.live = live ? "true" : "false";
}
