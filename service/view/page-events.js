"use strict";
// Live progress from the job's event stream (GET /v1/jobs/<id>/events), read with fetch so
// that the API key travels in a header (EventSource cannot send one).  Every event carries
// the job's progress fields; the terminal one is followed by one read of the job document.
// A stream that cannot be had (503 when the service has too many open, a proxy that
// buffers, an old browser) hands over to polling.
const TERMINAL = ["succeeded", "failed", "cancelled"];
let streamFailed = false, lastEventId = "", streamAbort = null;

function parseEvent(block) {
  const event = {id: "", name: "", data: "", retry: 0};
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "id") event.id = value;
    else if (field === "event") event.name = value;
    else if (field === "data") event.data += (event.data ? "\n" : "") + value;
    else if (field === "retry" && /^\d+$/.test(value)) event.retry = Number(value);
  }
  return event;
}

async function follow(round) {
  pollTimer = null;
  if (streamAbort) streamAbort.abort();
  const abort = streamAbort = new AbortController();
  const headers = {Accept: "text/event-stream"};
  if (lastEventId) headers["Last-Event-ID"] = lastEventId;
  let retry = 2000;
  try {
    const response = await call(api("events"), {headers, signal: abort.signal});
    if (!(response.headers.get("Content-Type") || "").startsWith("text/event-stream") ||
        !response.body) throw new Error("no event stream");
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done || round !== generation) break;
      buffer += value.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = parseEvent(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (event.retry) retry = event.retry;
        if (!event.name || !event.data) continue;
        if (event.id) lastEventId = event.id;
        showProgress(JSON.parse(event.data));
        if (TERMINAL.includes(event.name)) {
          abort.abort();
          pollTimer = setTimeout(poll, 0, round);  // the result, from the job document
          return;
        }
      }
    }
  } catch (error) {
    if (round !== generation || needKey(error)) return;
    streamFailed = true;
    $("status-detail").dataset.updates = "polling";
    pollTimer = setTimeout(poll, delay, round);
    return;
  }
  if (round === generation) pollTimer = setTimeout(follow, retry, round);  // ended early: resume
}
