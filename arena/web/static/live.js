// Live games in the browser: follow one game's event stream, and keep the /live table fresh.
// No build step, no library; bot-chosen text is only ever set as textContent.
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

// The /live page: re-read its JSON every data-refresh-s seconds and redraw the table.
function refreshLiveTable(table) {
  const every = Number(table.dataset.refreshS || 2) * 1000;
  const empty = document.getElementById("live-empty");
  const cell = (row, text, cls, href) => {
    const td = row.insertCell();
    if (cls) td.className = cls;
    if (href) { const a = document.createElement("a"); a.href = href; a.textContent = text; td.append(a); }
    else td.textContent = text;
  };
  const draw = (games) => {
    const body = table.tBodies[0];
    body.replaceChildren();
    for (const g of games) {
      const row = body.insertRow();
      cell(row, g.tournament, "", "/t/" + encodeURIComponent(g.tournament));
      cell(row, String(g.number), "num", g.game_url);
      cell(row, g.seats.join(" · "));
      cell(row, String(g.plays), "num");
      cell(row, g.updated_at);
    }
    table.hidden = games.length === 0;
    if (empty) empty.hidden = games.length !== 0;
  };
  const tick = () => fetch(table.dataset.json, { headers: { accept: "application/json" } })
    .then((r) => (r.ok ? r.json() : null))
    .then((data) => { if (data) draw(data.games); })
    .catch(() => {})  // a missed refresh; the next one tries again
    .finally(() => setTimeout(tick, every));
  setTimeout(tick, every);
}

document.addEventListener("DOMContentLoaded", () => {
  const table = document.getElementById("live-games");
  if (table) refreshLiveTable(table);
});
