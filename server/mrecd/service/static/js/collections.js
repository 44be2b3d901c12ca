// Collections: the list, and one collection's index as a paged table whose rows
// open that record's frames. The index (a few numbers per record) is read once
// and paged here; its rows link to /records/{r}/frames/{i}.
import { enc, getJSON, pooled } from "./api.js";
import { h, num, table } from "./dom.js";

const PAGE = 50;

/** A table of the collections whose names start with `prefix`, with their sizes. */
export async function collectionTable(prefix, signal) {
  const { collections } = await getJSON(`/v1/collections?prefix=${enc(prefix)}`, { signal });
  const summaries = new Map();
  await pooled(collections, 4, async (name) => {
    summaries.set(name, await getJSON(`/v1/collections/${enc(name)}`, { signal }));
  });
  if (!collections.length) return h("p", { class: "muted" }, "No collections.");
  return table([
    { title: "name", cell: (n) => h("a", { href: `#/collections/${enc(n)}` }, n) },
    { title: "records", num: true, cell: (n) => num(summaries.get(n)?.n_records) },
    { title: "frames", num: true, cell: (n) => num(summaries.get(n)?.n_frames) },
    { title: "", cell: (n) => (summaries.get(n)?.forcefield
      ? h("a", { href: `#/forcefield/collections/${enc(n)}` }, "force field") : "") },
  ], collections);
}

export async function showCollections({ root, signal }) {
  const filter = h("input", { type: "search", id: "collection-filter", placeholder: "name prefix", size: 24 });
  const holder = h("div", { id: "collections" });
  root.append(h("h1", {}, "Collections"), h("div", { class: "toolbar" }, h("label", {}, "Filter ", filter)), holder);
  const load = async () => holder.replaceChildren(await collectionTable(filter.value, signal));
  let typing = null;
  filter.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(() => load().catch(() => {}), 250); });
  await load();
}

export async function showCollection({ root, signal }, name) {
  const base = `/v1/collections/${enc(name)}`;
  const [summary, index] = await Promise.all([
    getJSON(base, { signal }), getJSON(`${base}/index`, { signal })]);
  const columns = Object.keys(index.columns);
  const holder = h("div", { id: "index" });
  const position = h("span", { id: "page-label" });
  const prev = h("button", { type: "button" }, "Previous");
  const next = h("button", { type: "button" }, "Next");
  root.append(
    h("h1", {}, name),
    h("div", { class: "toolbar" },
      h("span", {}, `${summary.n_records} records, ${summary.n_frames} frames`),
      summary.forcefield ? h("a", { href: `#/forcefield/collections/${enc(name)}` }, "force field") : null),
    h("h2", {}, "Index"), holder, h("div", { class: "pager" }, prev, position, next));
  let page = 0;
  const pages = Math.max(1, Math.ceil(index.count / PAGE));
  const value = (column, r) => {
    const v = index.columns[column].values?.[r];
    return Array.isArray(v) ? JSON.stringify(v) : num(v);
  };
  const render = () => {
    const rows = [];
    for (let r = page * PAGE; r < Math.min(index.count, (page + 1) * PAGE); r += 1) rows.push(r);
    holder.replaceChildren(table([
      { title: "r", num: true, cell: (r) => String(r) },
      ...columns.map((c) => ({ title: c, num: true, cell: (r) => value(c, r) })),
      { title: "", cell: (r) => (Number(index.columns.n_frames?.values?.[r] ?? 0) > 0
        ? h("a", { href: `#/collections/${enc(name)}/records/${r}/frames/0` }, "frames") : "") },
    ], rows));
    position.textContent = `page ${page + 1} of ${pages}`;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  };
  prev.addEventListener("click", () => { page -= 1; render(); });
  next.addEventListener("click", () => { page += 1; render(); });
  render();
}
