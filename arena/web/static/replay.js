// The replay viewer: steps through a game's views (arena/web/replay.py) play by play.
// No library, no build. The page has a #viewer with data-states (the states URL); this file
// loads it and makes `window.viewer`, which a live page can feed: viewer.append(views) adds
// steps (the slider grows; a viewer at the last step follows the new plays; a step sent again
// replaces the one held), viewer.go(k) shows step k, viewer.play() / viewer.pause() step on by
// themselves (one play a second at 1×; viewer.setSpeed(x)).
// A game being played (data-events) opens at its newest play and follows each new one as it
// comes, unless the reader has stepped back: then "N new plays" offers a way to the newest.
// The step is in the URL hash (#play-12), so a link opens at that play.
"use strict";

(function () {
  const SUITS = { C: "♣", D: "♦", H: "♥", S: "♠" };
  const SUIT_NAMES = { C: "clubs", D: "diamonds", H: "hearts", S: "spades" };
  const PLAY_MS = 1000;  // one play a second at 1×
  const SHEET_ITEMS = ["cards", "spades", "most_cards", "most_spades", "big_casino", "little_casino",
    "aces", "sweeps", "net_sweeps", "raw_points", "points"];

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  // A card as a small face: rank and suit symbol, red for hearts and diamonds.
  function card(code) {
    const rank = code.slice(0, -1), suit = code.slice(-1);
    const red = suit === "H" || suit === "D";
    return el("span", { class: "card " + (red ? "red" : "black"), "data-card": code,
      title: code, "aria-label": rank + " of " + (SUIT_NAMES[suit] || suit) }, [
      el("span", { class: "rank", text: rank }), el("span", { class: "suit", text: SUITS[suit] || suit })]);
  }

  function cards(codes, empty) {
    const box = el("span", { class: "cards" });
    if (!codes.length && empty) box.append(el("span", { class: "muted", text: empty }));
    for (const code of codes) box.append(card(code));
    return box;
  }

  function stepFromHash() {
    const m = /^#play-(\d+)$/.exec(location.hash);
    return m ? Number(m[1]) : null;
  }

  class Viewer {
    constructor(root, seats) {
      this.root = root;
      this.seats = seats;  // [{seat, name, ...}] by seat
      this.views = [];
      this.sheets = {};  // deal number -> its full score sheet (from the view that ended it)
      this.step = 0;
      this.live = Boolean(root.dataset.events);  // a game being played: follow it
      this.seen = 0;  // the newest step the reader has been at (plays after it are new to them)
      this.timer = null;  // autoplay's next step, while playing
      this.speed = 1;
      this.playButton = root.querySelector("#play-pause");
      this.playButton.addEventListener("click", () => this.toggle());
      const speed = root.querySelector("#speed");
      speed.addEventListener("change", () => this.setSpeed(Number(speed.value)));
      root.querySelector("#to-newest").addEventListener("click", () => this.go(this.views.length - 1));
      this.slider = root.querySelector("#slider");
      this.slider.addEventListener("input", () => this.go(Number(this.slider.value)));
      const buttons = { first: () => 0, prev: () => this.step - 1, next: () => this.step + 1,
        last: () => this.views.length - 1 };
      for (const [id, target] of Object.entries(buttons)) {
        root.querySelector("#" + id).addEventListener("click", () => this.go(target()));
      }
      document.addEventListener("keydown", (event) => this.key(event));
      window.addEventListener("hashchange", () => {
        const k = stepFromHash();
        if (k !== null && k !== this.step) this.go(k);
      });
    }

    name(seat) {
      const s = this.seats[seat];
      return s && s.name ? "P" + seat + " " + s.name : "P" + seat;
    }

    // Add steps at the end (a running game's new plays): the slider grows, and a viewer showing
    // the last step follows. The first views open at the step in the URL hash, else at 0 (a
    // finished game) or at the newest play (a game being played).
    append(views) {
      const first = this.views.length === 0;
      const following = !first && this.step === this.views.length - 1;
      for (const view of views) {
        // a step sent again replaces the one held (a game's last view gains `final` when it
        // ends after its last play, e.g. by a forfeit); a step beyond the next one is a gap: skipped
        if (!(view.step <= this.views.length)) continue;
        this.views[view.step] = view;
        if (view.deal_end) this.sheets[view.deal_end.deal] = view.deal_end.sheet;
      }
      this.slider.max = String(Math.max(0, this.views.length - 1));
      if (first) {
        this.seen = this.views.length - 1;  // what is there on opening is not new
        this.go(stepFromHash() ?? (this.live ? this.views.length - 1 : 0));
      } else if (following) this.go(this.views.length - 1);
      else this.render();  // "play k of n" and the new plays change
    }

    go(k) {
      if (!this.views.length) return;
      this.step = Math.max(0, Math.min(this.views.length - 1, k | 0));
      if (this.step === this.views.length - 1) this.seen = this.step;
      this.slider.value = String(this.step);
      const hash = "#play-" + this.step;
      if (location.hash !== hash) history.replaceState(null, "", hash);
      this.render();
    }

    // Autoplay: a step every PLAY_MS / speed; at the last step a finished game pauses, a game
    // being played waits there for its next play. Playing from the last step starts again at 0.
    play() {
      if (this.timer !== null || !this.views.length) return;
      if (!this.live && this.step === this.views.length - 1) this.go(0);
      this.schedule();
      this.showPlaying();
    }

    pause() {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      this.showPlaying();
    }

    toggle() {
      if (this.timer === null) this.play(); else this.pause();
    }

    get playing() { return this.timer !== null; }

    setSpeed(x) {
      if (!(x > 0)) return;
      this.speed = x;
      const select = this.root.querySelector("#speed");
      if (Number(select.value) !== x) select.value = String(x);
      if (this.timer !== null) { clearTimeout(this.timer); this.schedule(); }
    }

    schedule() {
      this.timer = setTimeout(() => {
        if (this.step < this.views.length - 1) this.go(this.step + 1);
        else if (!this.live) { this.pause(); return; }
        this.schedule();
      }, PLAY_MS / this.speed);
    }

    showPlaying() {
      const on = this.timer !== null;
      this.playButton.textContent = on ? "❚❚ pause" : "► play";
      this.playButton.setAttribute("aria-pressed", String(on));
      this.playButton.setAttribute("aria-label", on ? "pause" : "play");
    }

    key(event) {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      const t = event.target;
      if (t === this.slider && event.key !== " ") return;  // the slider moves itself (and says so through "input")
      if (t && (t.isContentEditable || /^(TEXTAREA|SELECT)$/.test(t.tagName))) return;
      if (t && t.tagName === "INPUT" && t !== this.slider) return;
      if (event.key === " ") {
        if (t && t.tagName === "BUTTON") return;  // space presses the focused button itself
        event.preventDefault();  // not a scroll of the page
        this.toggle();
        return;
      }
      const moves = { ArrowLeft: this.step - 1, ArrowRight: this.step + 1, Home: 0, End: this.views.length - 1 };
      if (!(event.key in moves)) return;
      event.preventDefault();
      this.go(moves[event.key]);
    }

    render() {
      const view = this.views[this.step];
      if (!view) return;
      const $ = (sel) => this.root.querySelector(sel);
      const last = this.views.length - 1;
      $("#step").textContent = this.step === 0 ? "start (play 0 of " + last + ")" : "play " + this.step + " of " + last;
      const fresh = last - this.seen;  // plays that came while the reader looked back
      $("#new-plays").hidden = !(fresh > 0 && this.step < last);
      $("#new-plays-count").textContent = fresh === 1 ? "1 new play" : fresh + " new plays";
      $("#where").textContent = "· deal " + view.deal + ", round " + view.round + ", dealer P" + view.dealer +
        ", " + view.stock + " cards to deal";
      const play = $("#play");
      play.replaceChildren();
      if (view.play) {
        const p = view.play;
        play.append(el("span", { class: "words", text: p.words }), " ",
          el("code", { class: "notation", text: p.move }));
        if (p.sweep) play.append(" ", el("span", { class: "badge", text: "sweep" }));
        if (p.forced) play.append(" ", el("span", { class: "badge", text: "forced",
          title: "the only legal move: played by the referee, no bot was asked" }));
        if (p.random) play.append(" ", el("span", { class: "badge warn", text: "random move: " + p.random.kind,
          title: p.random.reason }));
        // the bot's own words on this play (its owner sees them; everyone its notes when the tournament says so)
        if (p.report && p.report.error) play.append(el("span", { class: "bot-error",
          text: "bot error: " + p.report.error }));
        if (p.report && p.report.note) play.append(el("span", { class: "bot-note", text: "note: " + p.report.note }));
      } else {
        play.textContent = "The deal, before the first play.";
      }
      const end = $("#deal-end");
      end.hidden = !view.deal_end;
      if (view.deal_end) {
        const d = view.deal_end;
        end.replaceChildren("Deal " + d.deal + " is over." + (d.residue.length
          ? " " + this.name(d.residue_to) + " takes what is left: " : ""));
        if (d.residue.length) end.append(cards(d.residue));
      }
      this.renderTable(view);
      for (let seat = 0; seat < view.hands.length; seat++) {
        const hand = $("#hand-" + seat);
        if (hand) hand.replaceChildren(cards(view.hands[seat], "no cards"));
        const box = $("#seat-" + seat);
        if (box) {
          box.classList.toggle("moving", view.to_move === seat);
          box.querySelector(".to-move").hidden = view.to_move !== seat;
        }
      }
      const piles = $("#piles");
      piles.replaceChildren(...view.piles.map((p) => el("div", { class: "pile", id: "pile-" + p.side,
        "data-count": String(p.count) }, [
        el("div", { class: "pile-head", text: p.seats.map((s) => this.name(s)).join(" + ") + ": " + p.count +
          " cards, " + p.spades + " spades, " + p.sweeps + " sweep" + (p.sweeps === 1 ? "" : "s") }),
        cards(p.cards, "nothing yet")])));
      this.renderSheets(view);
      const final = $("#final");
      final.hidden = !view.final;
      if (view.final) {
        const f = view.final;
        final.replaceChildren(el("strong", { text: f.text }));
        for (const x of f.forfeits) {
          final.append(el("br"), el("span", { class: "error-text",
            text: x.who + " forfeits (" + x.kind + "): " + x.reason }));
        }
      }
    }

    // Loose cards in the order of the `table` line of `arena show --full`, then one box per build.
    renderTable(view) {
      const table = this.root.querySelector("#table");
      table.setAttribute("data-text", view.table_text);
      const loose = el("div", { class: "loose" }, [cards(view.table.loose, "no loose cards")]);
      const builds = view.table.builds.map((b) => el("div", { class: "build", "data-build": b.id,
        "data-value": String(b.value), "data-owner": String(b.owner), "data-kind": b.kind }, [
        el("div", { class: "build-head" }, [el("strong", { text: b.id + " · " + b.value }),
          " " + b.kind + " · " + this.name(b.owner)]),
        cards(b.cards)]));
      table.replaceChildren(loose, ...builds);
    }

    renderSheets(view) {
      const table = this.root.querySelector("#sheets");
      const sides = view.piles.map((p) => p.seats.map((s) => this.name(s)).join(" + "));
      const head = el("tr", {}, [el("th", { text: "deal" }), ...sides.map((s) => el("th", { class: "num", text: s }))]);
      const rows = view.sheets.map((s) => el("tr", {}, [el("td", { text: String(s.deal) }),
        ...s.points.map((pts, i) => el("td", { class: "num", text: "+" + pts + " = " + s.scores_after[i] }))]));
      const now = el("tr", { class: "total" }, [el("td", { text: "now" }),
        ...view.scores.map((v) => el("td", { class: "num", text: String(v) }))]);
      const body = [el("thead", {}, [head]), el("tbody", {}, [...rows, now])];
      const detail = view.sheets.map((s) => this.sheet(s.deal, sides)).filter(Boolean);
      table.replaceChildren(...body);
      const box = table.parentElement;
      box.querySelectorAll("details").forEach((d) => d.remove());
      box.append(...detail);
    }

    // The full score sheet of a finished deal, folded.
    sheet(deal, sides) {
      const sheet = this.sheets[deal];
      if (!sheet) return null;
      const rows = SHEET_ITEMS.map((item) => el("tr", {}, [el("td", { text: item.replace(/_/g, " ") }),
        ...sheet.sides.map((s) => el("td", { class: "num",
          text: typeof s[item] === "boolean" ? (s[item] ? "yes" : "-") : String(s[item]) }))]));
      // a side on 18-20 scores only by its condition (rule 15): which, and whether it was met
      rows.push(el("tr", {}, [el("td", { text: "restricted" }), ...sheet.sides.map((s) => el("td", { class: "num",
        text: s.restricted ? s.restricted.replace(/_/g, " ") + ": " + (s.condition_met ? "met" : "missed") : "-" }))]));
      const table = el("table", { class: "grid sheet" }, [
        el("thead", {}, [el("tr", {}, [el("th", { text: "item" }), ...sides.map((s) => el("th", { class: "num", text: s }))])]),
        el("tbody", {}, rows)]);
      const tied = sheet.tied.length ? [el("p", { class: "muted", text: "tied, scored by nobody: " + sheet.tied.join(", ") })] : [];
      return el("details", {}, [el("summary", { text: "deal " + deal + " score sheet" }), table, ...tied]);
    }
  }

  async function start() {
    const root = document.getElementById("viewer");
    if (!root) return;
    const seats = JSON.parse(document.getElementById("viewer-seats").textContent || "[]");
    const viewer = new Viewer(root, seats);
    window.viewer = viewer;
    if (!root.dataset.states) return;  // a page that feeds the viewer itself (viewer.append)
    const load = async () => {
      try {
        const answer = await fetch(root.dataset.states, { headers: { accept: "application/json" } });
        const body = await answer.json();
        if (!answer.ok) throw new Error(body.error || answer.statusText);
        viewer.append(body.views);
      } catch (err) {
        root.querySelector("#step").textContent = "could not load the plays: " + err.message;
      }
    };
    await load();
    // a game being played: every new report of its plays loads the steps again (a step held
    // is replaced, new ones are appended); when it is stored, once more for its final result
    if (root.dataset.events && typeof followGame === "function") {
      let loading = Promise.resolve();
      const reload = () => { loading = loading.then(load); };
      followGame(root.dataset.events, reload, () => {
        reload();
        const notice = document.getElementById("live-notice");
        if (notice) notice.textContent = "This game has ended.";
      });
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
