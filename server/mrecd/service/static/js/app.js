// The page's router: #/ records, #/records/NAME run, #/records/NAME/frames/I frame,
// #/collections, #/collections/NAME, #/collections/NAME/records/R/frames/I,
// #/forcefield/(records|collections)/NAME. Each view gets an AbortSignal that
// fires when the user leaves it (its fetches and event streams stop).
import { setToken, token } from "./api.js";
import { showCollection, showCollections } from "./collections.js";
import { showForcefield } from "./forcefield.js";
import { collectionFrames, recordFrames, showFrames } from "./frames.js";
import { showRecords } from "./records.js";
import { showRun } from "./run.js";

const ROUTES = [
  [/^#?\/?$/, (m, v) => showRecords(v)],
  [/^#\/records\/([^/]+)$/, (m, v) => showRun(v, decodeURIComponent(m[1]))],
  [/^#\/records\/([^/]+)\/frames\/(\d+)$/, (m, v) => showFrames(v, recordFrames(decodeURIComponent(m[1])), Number(m[2]))],
  [/^#\/collections$/, (m, v) => showCollections(v)],
  [/^#\/collections\/([^/]+)$/, (m, v) => showCollection(v, decodeURIComponent(m[1]))],
  [/^#\/collections\/([^/]+)\/records\/(\d+)\/frames\/(\d+)$/,
    (m, v) => showFrames(v, collectionFrames(decodeURIComponent(m[1]), Number(m[2])), Number(m[3]))],
  [/^#\/forcefield\/(records|collections)\/([^/]+)$/,
    (m, v) => showForcefield(v, m[1], decodeURIComponent(m[2]))],
];

let current = null;

export function notify(message) {
  const notice = document.getElementById("notice");
  notice.textContent = message ?? "";
  notice.hidden = !message;
}

async function route() {
  current?.abort();
  current = new AbortController();
  const view = document.getElementById("view");
  view.replaceChildren();
  notify(null);
  const hash = location.hash || "#/";
  for (const [pattern, show] of ROUTES) {
    const m = hash.match(pattern);
    if (!m) continue;
    try {
      await show(m, { root: view, signal: current.signal, notify });
    } catch (error) {
      if (!current.signal.aborted) notify(error.message);
    }
    return;
  }
  notify(`No such page: ${hash}`);
}

function tokenForm() {
  const form = document.getElementById("token-form");
  const input = document.getElementById("token");
  const state = document.getElementById("token-state");
  const label = () => { state.textContent = token() ? "token set" : "no token"; };
  input.value = token();
  label();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    setToken(input.value.trim());
    label();
    route();
  });
}

tokenForm();
window.addEventListener("hashchange", route);
route();
