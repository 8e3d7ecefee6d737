// Live games in the browser: follow one game's event stream, and keep the /live list fresh.
// No build step, no library; bot-chosen text is only ever set as textContent, or comes in the
// server's own escaped HTML.
"use strict";

// Follow a running game: onPlays(n) each time its plays count changes (at once on connecting),
// onDone(status) once it is stored ("done") or failed ("failed"), after which the stream is closed.
// The browser reconnects by itself if the stream drops. Returns the EventSource (close() stops).
function followGame(eventsUrl, onPlays, onDone) {
  const source = new EventSource(eventsUrl);
  source.addEventListener("plays", (e) => onPlays(JSON.parse(e.data).plays));
  source.addEventListener("done", (e) => {
    source.close();
    if (onDone) onDone(JSON.parse(e.data).status);
  });
  return source;
}

// The /live page: every data-refresh-s seconds, load the page again and put its list in place of
// this one. The server draws the list (its relative times, its scores: one renderer, the same with
// or without script); DOMParser runs no script of what it parses, and the text in it is escaped.
function refreshLiveList(list) {
  const every = Number(list.dataset.refreshS || 2) * 1000;
  const tick = () => fetch(list.dataset.source, { headers: { accept: "text/html" } })
    .then((r) => (r.ok ? r.text() : null))
    .then((html) => {
      if (html === null) return;
      const fresh = new DOMParser().parseFromString(html, "text/html");
      const take = (from, to) => { if (from && to) to.replaceChildren(...[...from.childNodes].map((n) => document.importNode(n, true))); };
      take(fresh.getElementById("live-list"), list);
      take(fresh.querySelector("footer .freshness"), document.querySelector("footer .freshness"));
    })
    .catch(() => {})  // a missed refresh; the next one tries again
    .finally(() => setTimeout(tick, every));
  setTimeout(tick, every);
}

document.addEventListener("DOMContentLoaded", () => {
  const list = document.getElementById("live-list");
  if (list) refreshLiveList(list);
});
