// Data calls of the page: every request carries the token from this tab's
// sessionStorage in an Authorization header, never in a URL.

const TOKEN_KEY = "mrecd.token";

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(accept, extra = {}) {
  const h = new Headers({ Accept: accept, ...extra });
  const t = token();
  if (t) h.set("Authorization", `Bearer ${t}`);
  return h;
}

/** An HTTP refusal, with the problem document (RFC 9457) when the server sent one. */
export class ApiError extends Error {
  constructor(status, problem, url) {
    const what = problem?.detail ?? problem?.title ?? `HTTP ${status}`;
    super(`${what} (${status}, ${url})`);
    this.status = status;
    this.problem = problem;
  }
}

export const enc = encodeURIComponent;

export async function request(url, { accept = "application/json", signal } = {}) {
  const response = await fetch(url, { headers: headers(accept), signal });
  if (!response.ok) {
    let problem = null;
    try {
      problem = await response.json();
    } catch {
      problem = null;
    }
    throw new ApiError(response.status, problem, url);
  }
  return response;
}

export async function getJSON(url, options) {
  return (await request(url, options)).json();
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

function parseEvent(block) {
  const event = { type: "message", id: null, data: [], retry: null };
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event.type = value;
    else if (field === "id") event.id = value;
    else if (field === "data") event.data.push(value);
    else if (field === "retry" && /^\d+$/.test(value)) event.retry = Number(value);
  }
  return event;
}

/**
 * Follow a server-sent events stream with fetch (EventSource cannot send an
 * Authorization header). Calls onCommit({nstep, previous}) per commit event,
 * reconnects with Last-Event-ID after a dropped connection, stops on abort or
 * on a 4xx (reported to onError).
 */
export async function follow(url, { signal, onCommit, onError = () => {} }) {
  let lastId = null;
  let retry = 1000;
  while (!signal.aborted) {
    try {
      const extra = lastId === null ? {} : { "Last-Event-ID": lastId };
      const response = await fetch(url, { headers: headers("text/event-stream", extra), signal });
      if (!response.ok) throw new ApiError(response.status, null, url);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n?/g, "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const event = parseEvent(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (event.retry !== null) retry = event.retry;
          if (event.id !== null) lastId = event.id;
          if (event.type === "commit" && event.data.length) onCommit(JSON.parse(event.data.join("\n")));
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError && error.status < 500) {
        onError(error);
        return;
      }
    }
    await sleep(Math.max(retry, 250), signal);
  }
}

/** Run jobs(item) over items with at most `limit` in flight (the browser has 6 connections). */
export async function pooled(items, limit, job) {
  const queue = [...items];
  const workers = Array.from({ length: Math.min(limit, queue.length) }, async () => {
    while (queue.length) await job(queue.shift());
  });
  await Promise.all(workers);
}
