// Force-field view: the document and its tables, and the four lookups (atom,
// term, pair, match) as a small form whose answer is shown as JSON.
import { ApiError, enc, getJSON } from "./api.js";
import { h, num, table } from "./dom.js";

export async function showForcefield({ root, signal }, kind, name) {
  const base = `/v1/${kind}/${enc(name)}/forcefield`;
  const ff = await getJSON(base, { signal });
  root.append(h("h1", {}, `${name} · force field`), lookups(base, signal));
  const tables = h("div", { id: "ff-tables" });
  root.append(tables);
  for (const [title, block] of tablesOf(ff)) {
    tables.append(h("h2", {}, title), blockTable(block));
  }
  // the JSON interchange form: the document's members beside its tables
  const { tables: _, ...document } = ff;
  root.append(h("h2", {}, "Document"), h("pre", { class: "result", id: "ff-document" }, JSON.stringify(document, null, 2)));
}

/** [title, block] pairs of the force field's tables, whatever their nesting. */
function tablesOf(ff) {
  const out = [];
  const walk = (value, path) => {
    if (!value || typeof value !== "object") return;
    if (value.columns && typeof value.columns === "object") {
      out.push([path.map(decodeURIComponent).join(" / "), value]); // "pair.lj%2Fcut" names a style
      return;
    }
    for (const [key, child] of Object.entries(value)) walk(child, [...path, key]);
  };
  walk(ff.tables ?? {}, []);
  return out;
}

function blockTable(block) {
  const columns = Object.keys(block.columns);
  const count = block.count ?? block.columns[columns[0]]?.values?.length ?? 0;
  const rows = Array.from({ length: count }, (_, r) => r);
  return table(columns.map((c) => ({
    title: c,
    num: block.columns[c].dtype !== "string",
    cell: (r) => {
      const v = block.columns[c].values?.[r];
      return Array.isArray(v) ? JSON.stringify(v) : num(v);
    },
  })), rows);
}

function lookups(base, signal) {
  const result = h("pre", { class: "result", id: "lookup-result" }, "Look a parameter up above.");
  const ask = async (path) => {
    try {
      result.textContent = JSON.stringify(await getJSON(`${base}/${path}`, { signal }), null, 2);
    } catch (error) {
      result.textContent = error instanceof ApiError ? JSON.stringify(error.problem ?? error.message, null, 2) : error.message;
    }
  };
  const form = (id, fields, path) => {
    const inputs = fields.map(([field, hint]) => h("input", { name: field, placeholder: hint, size: 14 }));
    return h("form", {
      class: "lookup", id,
      onsubmit: (event) => {
        event.preventDefault();
        const v = Object.fromEntries(inputs.map((i) => [i.name, i.value.trim()]));
        ask(path(v));
      },
    }, h("strong", {}, id.replace("lookup-", "")), ...inputs, h("button", { type: "submit" }, "Look up"));
  };
  const style = (v) => (v.style ? `?style=${enc(v.style)}` : "");
  return h("section", {},
    h("h2", {}, "Lookups"),
    form("lookup-atom", [["type", "atom type"]], (v) => `atoms/${enc(v.type)}`),
    form("lookup-term", [["category", "bond"], ["name", "CT-HC"], ["style", "style (optional)"]],
      (v) => `terms/${enc(v.category)}/${enc(v.name)}${style(v)}`),
    form("lookup-pair", [["a", "type a"], ["b", "type b"], ["style", "style (optional)"]],
      (v) => `pairs/${enc(v.a)}/${enc(v.b)}${style(v)}`),
    form("lookup-match", [["category", "angle"], ["types", "HC,CT,HC"]],
      (v) => `match/${enc(v.category)}?types=${enc(v.types)}`),
    result);
}
