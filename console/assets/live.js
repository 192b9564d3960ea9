// Live updates: the plan events of GET /v1/config-events/stream (SPEC §19).
// EventSource cannot send the Authorization header, and the key must never
// travel in a URL or a cookie (§15), so the stream is read with fetch() and
// parsed here. One stream at a time: a page follows it while it is shown,
// and the router stops it on every navigation (a stream holds one of the
// environment's ten places). A stream that ends is reconnected with the
// last event's id (Last-Event-ID), so that no event is missed.
import { getKey } from './api.js';

let controller = null;

// stopLive ends the stream being followed, if any.
export function stopLive() {
  if (controller) controller.abort();
  controller = null;
}

// followLive calls onEvent({id, type, data}) for each event of the stream
// until stopLive (or the next followLive).
export function followLive(onEvent) {
  stopLive();
  controller = new AbortController();
  run(controller.signal, onEvent);
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });
}

async function run(signal, onEvent) {
  let last = '';
  while (!signal.aborted) {
    let wait = 2000;
    try {
      const headers = { Accept: 'text/event-stream', Authorization: 'Bearer ' + getKey() };
      if (last) headers['Last-Event-ID'] = last;
      const resp = await fetch('/v1/config-events/stream', { headers, cache: 'no-store', credentials: 'omit', redirect: 'error', signal });
      if (resp.status === 401 || resp.status === 403) return; // the key cannot follow: the page still works
      if (resp.ok) {
        last = await read(resp.body, signal, onEvent, last);
      } else {
        const p = await resp.json().catch(() => null);
        if (p && p.retry_after) wait = p.retry_after * 1000;
      }
    } catch {
      if (signal.aborted) return;
    }
    await sleep(wait, signal);
  }
}

// read parses the stream's messages and returns the last event's id.
async function read(body, signal, onEvent, last) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let ev = {};
  while (!signal.aborted) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).replace(/\r$/, '');
      buf = buf.slice(i + 1);
      if (line === '') {
        if (ev.id) {
          last = ev.id;
          let data = null;
          try {
            data = JSON.parse(ev.data || 'null');
          } catch {
            data = null;
          }
          onEvent({ id: ev.id, type: ev.type, data });
        }
        ev = {};
        continue;
      }
      const colon = line.indexOf(':');
      if (colon === 0) continue; // a comment: the heartbeat
      const field = colon < 0 ? line : line.slice(0, colon);
      const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') ev.id = val;
      else if (field === 'event') ev.type = val;
      else if (field === 'data') ev.data = val;
    }
  }
  return last;
}
