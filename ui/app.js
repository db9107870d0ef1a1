// The dashboard: a hash-routed page over the service's own API. Pages: #/ (pools),
// #/pools/P (leaderboard in the pool's own order, with its display rating, provisional marks
// and leagues; search; distribution), #/pools/P/players/X (a profile: rating over dated time,
// peak, place, each round's change), #/pools/P/rounds/R (its entrants, expected and actual
// places, changes). A page's choices live in the hash after `?`, so a link keeps them. No
// library, nothing loaded from elsewhere.
"use strict";

const view = document.getElementById("view");
const keyForm = document.getElementById("key-form");
const PAGE = 20;
// Above this many rounds a player's chart draws its performance dots small and faint, so
// that they do not hide the rating's line.
const MANY_ROUNDS = 100;

// A read key, when the service asks for one (kept in this browser only).
keyForm.addEventListener("submit", (event) => {
  event.preventDefault();
  localStorage.setItem("mmr-key", document.getElementById("key").value);
  keyForm.hidden = true;
  route();
});

async function api(path) {
  const key = localStorage.getItem("mmr-key");
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  const response = await fetch(path, { headers });
  if (response.status === 401 || response.status === 403) {
    keyForm.hidden = false;
  }
  // A proxy's error page is not JSON: its status still says what went wrong.
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(body.error ? body.error.message : `HTTP ${response.status}`);
  }
  return body;
}

// Runs a page's work, showing what failed instead of leaving the page half-drawn.
async function guarded(work) {
  try {
    await work();
  } catch (error) {
    show(el("p", { class: "error" }, `Could not load this page: ${error.message}`));
  }
}

// Builds an element: el("td", {class: "x"}, "text", child, …).
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

const enc = encodeURIComponent;
const known = (x) => x !== null && x !== undefined;
const fixed = (x, digits = 1) => (known(x) ? Number(x).toFixed(digits) : "–");
const whole = (x) => (known(x) ? Math.round(x).toLocaleString("en") : "–");
const day = (time) => (time ? time.slice(0, 10) : "–");
const poolLink = (pool) => el("a", { href: `#/pools/${enc(pool)}` }, pool);
const playerLink = (pool, player) =>
  el("a", { href: `#/pools/${enc(pool)}/players/${enc(player)}` }, player);
const roundLink = (pool, id) => el("a", { href: `#/pools/${enc(pool)}/rounds/${enc(id)}` }, id);

// A change, signed and coloured by its sign (the sign is in the text too, not in colour alone).
function change(delta, digits = 1) {
  if (!known(delta)) {
    return el("span", {}, "–");
  }
  const shown = Number(delta).toFixed(digits);
  if (Number(shown) === 0) {
    return el("span", { class: "delta" }, "±0");
  }
  return delta > 0
    ? el("span", { class: "delta up" }, `+${shown}`)
    : el("span", { class: "delta down" }, `−${shown.slice(1)}`);
}

// The change from `before` to `after` (either may be unknown), as `change` shows it.
const changeOf = (after, before, digits) =>
  change(known(after) && known(before) ? after - before : null, digits);

// A league badge in its league's colour (by its place among the pool's leagues).
function badge(league, leagues) {
  if (!league) {
    return "";
  }
  const index = leagues ? leagues.tiers.findIndex((t) => t.name === league.league) : -1;
  const text = league.division ? `${league.league} ${league.division}` : league.league;
  return el("span", { class: `badge tier${Math.max(0, index) % 6}`, title: "league and division" }, text);
}

const provisionalMark = () => el("span", { class: "tag", title: "too few rounds to be ranked yet" }, "provisional");

// `cells` may hold a class for its column: [text-or-node, …] with `columns[i].class`.
function table(columns, rows, id, caption) {
  const head = el("tr", {}, ...columns.map((c) => el("th", { scope: "col", class: c.class || "" }, c.title)));
  const body = rows.map((cells) => el("tr", {}, ...cells.map((c, i) => el("td", { class: columns[i].class || "" }, c))));
  const parts = [el("thead", {}, head), el("tbody", {}, ...body)];
  if (caption) {
    parts.unshift(el("caption", { class: "hidden" }, caption));
  }
  return el("div", { class: "scroll" }, el("table", id ? { id } : {}, ...parts));
}

// Each navigation's number: a page still loading when the reader moved on draws nothing.
let navigation = 0;

function show(...nodes) {
  view.replaceChildren(...nodes);
}

// Draws a page unless a later navigation has begun since `started`.
function showFor(started, ...nodes) {
  if (started === navigation) {
    show(...nodes);
  }
}

// The hash's choices after `?`, and a hash with some of them changed (empty values dropped).
function choices() {
  return new URLSearchParams(location.hash.split("?")[1] || "");
}
function withChoices(base, changes) {
  const query = choices();
  for (const [name, value] of Object.entries(changes)) {
    if (known(value) && value !== "") {
      query.set(name, value);
    } else {
      query.delete(name);
    }
  }
  const text = query.toString();
  return text ? `${base}?${text}` : base;
}

async function poolsPage(started) {
  const { pools } = await api("/v1/pools");
  showFor(started,
    el("h1", {}, "Pools"),
    pools.length === 0
      ? el("p", {}, "No pool yet: create one with PUT /v1/pools/{pool}.")
      : table(
          [{ title: "pool" }, { title: "system" }, { title: "players", class: "number" }, { title: "rounds", class: "number" }],
          pools.map((p) => [poolLink(p.name), p.system, p.players ?? "—", p.rounds_applied]),
          "pools",
          "Pools"
        )
  );
}

// Previous and next links over pages named by cursors: `page(changes)` is the hash of a page.
function pager(previous, next) {
  const paging = el("nav", { class: "paging", "aria-label": "pages" });
  if (previous) {
    paging.append(el("a", { id: "previous", class: "button", href: previous }, "← Previous"));
  }
  if (next) {
    paging.append(el("a", { id: "next", class: "button", href: next }, "Next →"));
  }
  return paging;
}

// The order a board is in: the one asked for, else the pool's default, as the API resolves it
// (display::Display::default_ranking).
function ranking(display, order) {
  if (order) {
    return order;
  }
  if (display.default_order !== "auto") {
    return display.default_order;
  }
  return display.fixed_range ? "display_rating" : "conservative";
}

// The rating a board in `order` shows, its title and its value in a rating, a player or a peak
// (each of which carries `mu`, `conservative` and `display_rating`).
function ratingColumn(display, order) {
  switch (ranking(display, order)) {
    case "mu":
      return { title: "μ", value: (r) => fixed(r.mu) };
    case "display_rating":
      return { title: "rating", value: (r) => whole(r.display_rating) };
    default:
      return { title: `μ − ${display.conservative_k}σ`, value: (r) => fixed(r.conservative) };
  }
}

const ORDERS = [
  ["", "the pool's order"],
  ["display_rating", "display rating"],
  ["conservative", "conservative (μ − kσ)"],
  ["mu", "μ"],
];

// The activity windows offered: `active_days` and how the choice reads.
const ACTIVE = [
  ["", "at any time"],
  ["30", "within 30 days of the newest round"],
  ["90", "within 90 days of the newest round"],
  ["365", "within a year of the newest round"],
];

// The board's choices: order, activity, provisional players, league.
function boardControls(pool, info, base) {
  const query = choices();
  const display = info.display;
  const form = el("form", { class: "controls", id: "board-controls" });
  const order = el("select", { id: "order", name: "order" });
  for (const [value, text] of ORDERS) {
    if (value === "display_rating" && !display.fixed_range) {
      continue;
    }
    const option = el("option", { value }, text);
    option.selected = (query.get("order") || "") === value;
    order.append(option);
  }
  const listed = query.has("established") ? query.get("established") === "false" : display.list_provisional;
  const everyone = el("input", { type: "checkbox", id: "everyone" });
  everyone.checked = listed;
  const active = el("select", { id: "active" });
  for (const [value, text] of ACTIVE) {
    const option = el("option", { value }, text);
    option.selected = (query.get("active_days") || "") === value;
    active.append(option);
  }
  form.append(
    el("label", {}, "Order ", order),
    el("label", {}, "Last played ", active),
    el("label", {}, everyone, " provisional players too")
  );
  let league = null;
  if (display.leagues) {
    league = el("select", { id: "league" });
    league.append(el("option", { value: "" }, "every league"));
    for (const tier of display.leagues.tiers) {
      const option = el("option", { value: tier.name }, tier.name);
      option.selected = query.get("league") === tier.name;
      league.append(option);
    }
    form.append(el("label", {}, "League ", league));
  }
  const apply = () => {
    const chosen = {
      order: order.value,
      established: everyone.checked === display.list_provisional ? null : String(!everyone.checked),
      league: league ? league.value : null,
      active_days: active.value || null,
      cursor: null,
      before: null,
    };
    location.hash = withChoices(base, chosen);
  };
  form.addEventListener("change", apply);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    apply();
  });
  return form;
}

async function leaderboardPage(pool, started) {
  const base = `#/pools/${enc(pool)}`;
  const query = choices();
  const read = new URLSearchParams({ limit: PAGE });
  for (const name of ["order", "established", "league", "active_days", "cursor", "before"]) {
    if (query.get(name)) {
      read.set(name, query.get(name));
    }
  }
  // A league's board and `established=true` exclude each other: a league lists its players.
  if (read.get("league")) {
    read.delete("established");
  }
  const [info, board, distribution] = await Promise.all([
    api(`/v1/pools/${enc(pool)}`),
    api(`/v1/pools/${enc(pool)}/leaderboard?${read}`),
    api(`/v1/pools/${enc(pool)}/distribution?bins=20`),
  ]);
  const display = info.display;
  const rating = ratingColumn(display, query.get("order") || "");
  const search = el("input", {
    id: "search", type: "search", placeholder: "Find a player by id prefix", "aria-label": "find a player by id prefix",
  });
  const found = el("ul", { id: "found" });
  search.addEventListener("input", async () => {
    const prefix = search.value;
    if (!prefix) {
      found.replaceChildren();
      return;
    }
    try {
      const { players } = await api(`/v1/pools/${enc(pool)}/players?prefix=${enc(prefix)}&limit=10`);
      if (search.value === prefix) {
        found.replaceChildren(
          ...players.map((p) => el("li", {}, playerLink(pool, p.player), ` ${place(p)} · ${rating.title} ${rating.value(p)}`))
        );
      }
    } catch (error) {
      found.replaceChildren(el("li", { class: "error" }, `Search failed: ${error.message}`));
    }
  });
  const columns = [
    { title: "#", class: "number" },
    { title: "player", class: "name" },
    { title: rating.title, class: "number" },
  ];
  if (display.leagues) {
    columns.push({ title: "league" });
  }
  columns.push({ title: "rounds", class: "number" }, { title: "last played", class: "wide" }, { title: "μ ± σ", class: "number wide" });
  const rows = board.entries.map((e) => {
    const who = el("span", { class: "who" }, playerLink(pool, e.player));
    if (e.provisional) {
      who.append(" ", provisionalMark());
    }
    const cells = [e.position, who, rating.value(e)];
    if (display.leagues) {
      cells.push(badge(e.league, display.leagues));
    }
    cells.push(e.rounds, day(e.last_round && e.last_round.time), known(e.sigma) ? `${fixed(e.mu)} ± ${fixed(e.sigma)}` : fixed(e.mu));
    return cells;
  });
  const listed = query.has("established") ? query.get("established") === "false" : display.list_provisional;
  const days = query.get("active_days");
  const counted = (query.get("league") ? `in ${query.get("league")}` : listed ? "rated" : "established")
    + (days ? ` · played in the ${days} days before the newest round` : "");
  showFor(started,
    el("h1", {}, pool),
    el("p", { class: "summary" }, `${board.total.toLocaleString("en")} players ${counted} · ${info.system.replace("_", "-")}`,
      display.fixed_range ? ` · ratings from 0 to ${whole(display.fixed_range.max)}` : ""),
    boardControls(pool, info, base),
    search,
    found,
    table(columns, rows, "leaderboard", `Leaderboard of ${pool}`),
    pager(
      board.prev_cursor ? withChoices(base, { before: board.prev_cursor, cursor: null }) : null,
      board.next_cursor ? withChoices(base, { cursor: board.next_cursor, before: null }) : null
    ),
    el("h2", {}, "Rating distribution (μ)"),
    histogram(distribution)
  );
}

// Bars of the pool's μ histogram.
function histogram({ bins }) {
  const width = 600, height = 160, most = Math.max(1, ...bins.map((b) => b.count));
  const bar = width / Math.max(1, bins.length);
  const chart = svg("svg", { id: "histogram", viewBox: `0 0 ${width} ${height + 20}`, role: "img", "aria-label": "how many players have each μ" });
  bins.forEach((b, i) => {
    const h = (b.count / most) * height;
    const rect = svg("rect", { x: i * bar + 1, y: height - h, width: bar - 2, height: h, class: "bin", "data-count": b.count });
    rect.append(svg("title", {}, `${fixed(b.low)}–${fixed(b.high)}: ${b.count}`));
    chart.append(rect);
  });
  if (bins.length) {
    chart.append(
      svg("text", { x: 0, y: height + 16 }, fixed(bins[0].low, 0)),
      svg("text", { x: width, y: height + 16, "text-anchor": "end" }, fixed(bins[bins.length - 1].high, 0))
    );
  }
  return chart;
}

// A percentage with the digits that tell small ones apart: 12, 1.3, 0.005.
const percent = (x) => (x >= 10 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : Number(x.toPrecision(1)).toString());

// A player's place on the pool's leaderboard, or why they have none.
function place(rating) {
  if (!known(rating.position)) {
    return rating.provisional ? "provisional" : "not listed";
  }
  const top = known(rating.top_percent) ? ` · top ${percent(rating.top_percent)}%` : "";
  return `#${rating.position} of ${rating.total}${top}`;
}

// What a player's chart and table show: the display rating where the pool has one, else μ.
function scaleOf(fixedRange) {
  if (!fixedRange) {
    return { name: "μ", after: (e) => e.mu, before: (e) => e.mu_before, of: (mu) => mu };
  }
  const { max, center, scale } = fixedRange;
  return {
    name: "rating",
    after: (e) => e.display_rating_after,
    before: (e) => e.display_rating_before,
    of: (mu) => max / (1 + Math.exp(-(mu - center) / scale)),
  };
}

async function playerPage(pool, player, started) {
  const base = `/v1/pools/${enc(pool)}/players/${enc(player)}`;
  const [rating, info, shown, first] = await Promise.all([
    api(base),
    api(`/v1/pools/${enc(pool)}`),
    api(`/v1/pools/${enc(pool)}/display`),
    api(`${base}/history?limit=1000`),
  ]);
  let entries = first.entries, before = first.next_before;
  while (known(before) && started === navigation) {
    const page = await api(`${base}/history?limit=1000&before=${before}`);
    entries = entries.concat(page.entries);
    before = page.next_before;
  }
  const display = info.display;
  const scale = scaleOf(shown.fixed_range);
  const oldestFirst = entries.slice().reverse();
  // The rating and the peak as the pool's leaderboard ranks and shows them; the peak is the
  // API's, the round after which the player stood highest in that order.
  const shownRating = ratingColumn(display, "");
  const peak = rating.peak;
  const digits = shown.fixed_range ? 0 : 1;
  const title = el("h1", {}, player);
  if (rating.provisional) {
    title.append(" ", provisionalMark());
  }
  if (rating.league) {
    title.append(" ", badge(rating.league, display.leagues));
  }
  const facts = el("dl", { class: "facts" },
    el("div", {}, el("dt", {}, shownRating.title === "rating" ? "Rating now" : `Rating now (${shownRating.title})`), el("dd", { id: "current" }, shownRating.value(rating))),
    el("div", {}, el("dt", {}, "Peak"), el("dd", { id: "peak" }, peak ? shownRating.value(peak) : "–",
      peak ? el("small", {}, " after ", roundLink(pool, peak.round.id), peak.round.time ? ` (${day(peak.round.time)})` : "") : "")),
    el("div", {}, el("dt", {}, "Place"), el("dd", { id: "place" }, place(rating))),
    el("div", {}, el("dt", {}, "Rounds"), el("dd", {}, rating.rounds)),
    el("div", {}, el("dt", {}, "μ ± σ"), el("dd", {}, known(rating.sigma) ? `${fixed(rating.mu)} ± ${fixed(rating.sigma)}` : fixed(rating.mu)))
  );
  const readout = el("p", { id: "readout", class: "readout", "aria-live": "polite" }, "Point at the chart, or focus it and use the arrow keys, to read a round.");
  const legend = el("p", { class: "legend" },
    `Line: ${scale.name === "μ" ? "μ" : "the displayed rating"} after each round`,
    entries.some((e) => known(e.sigma)) ? `; band: μ ± σ${scale.name === "μ" ? "" : " on the same scale"}` : "",
    "; dots: each round's performance (each links to its round)",
    display.leagues ? "; shaded: the leagues' thresholds" : "",
    ".");
  showFor(started,
    title,
    el("p", { class: "summary" }, "in ", poolLink(pool), ` · ${info.system.replace("_", "-")}`),
    facts,
    ratingChart(pool, oldestFirst, scale, display.leagues, readout, digits),
    readout,
    legend,
    historyTable(pool, entries, scale, digits)
  );
}

// The player's rounds, newest first, a page at a time (in this page: the history is loaded).
function historyTable(pool, entries, scale, digits) {
  const holder = el("div", {});
  const draw = (start) => {
    const page = entries.slice(start, start + PAGE);
    const expected = page.some((e) => known(e.expected_rank));
    const columns = [
      { title: "round" }, { title: "date", class: "wide" }, { title: "place", class: "number" },
      ...(expected ? [{ title: "expected", class: "number wide" }] : []),
      { title: "performance", class: "number wide" }, { title: scale.name, class: "number" }, { title: "change", class: "number" },
    ];
    const rows = page.map((e) => {
      const after = scale.after(e), before = scale.before(e);
      return [
        roundLink(pool, e.round_id), day(e.time), `${e.rank} / ${e.entrants}`,
        ...(expected ? [known(e.expected_rank) ? fixed(e.expected_rank) : "–"] : []), fixed(e.performance),
        fixed(after, digits), changeOf(after, before, digits),
      ];
    });
    const paging = el("nav", { class: "paging", "aria-label": "history pages" });
    if (start > 0) {
      const newer = el("button", { id: "newer", type: "button" }, "← Newer");
      newer.onclick = () => draw(Math.max(0, start - PAGE));
      paging.append(newer);
    }
    if (start + PAGE < entries.length) {
      const older = el("button", { id: "older", type: "button" }, "Older →");
      older.onclick = () => draw(start + PAGE);
      paging.append(older);
    }
    holder.replaceChildren(
      el("h2", {}, `Rounds ${start + 1}–${start + page.length} of ${entries.length}, newest first`),
      table(columns, rows, "history", "Rounds played"),
      paging
    );
  };
  draw(0);
  return holder;
}

// Ticks for a time axis from `low` to `high` (milliseconds): years, months, or days on a short
// span; at least its two ends.
function timeTicks(low, high) {
  const DAY = 864e5;
  const days = (high - low) / DAY;
  const label = (at, parts) => new Date(at).toLocaleString("en", { ...parts, timeZone: "UTC" });
  const ticks = [];
  if (days >= 730) {
    const years = days / 365.25;
    const step = [1, 2, 5, 10, 20, 50].find((s) => years / s <= 8) || 100;
    for (let year = Math.ceil(new Date(low).getUTCFullYear() / step) * step; Date.UTC(year, 0, 1) <= high; year += step) {
      if (Date.UTC(year, 0, 1) >= low) {
        ticks.push([Date.UTC(year, 0, 1), String(year)]);
      }
    }
  } else if (days >= 60) {
    const step = [1, 2, 3, 6, 12].find((s) => days / 30.4 / s <= 8) || 12;
    const start = new Date(low);
    for (let month = Math.ceil((start.getUTCFullYear() * 12 + start.getUTCMonth()) / step) * step; ; month += step) {
      const at = Date.UTC(Math.floor(month / 12), month % 12, 1);
      if (at > high) {
        break;
      }
      if (at >= low) {
        ticks.push([at, label(at, { month: "short", year: "numeric" })]);
      }
    }
  } else {
    const step = [1, 2, 7, 14, 28].find((s) => days / s <= 8) || 28;
    for (let at = Math.ceil(low / DAY) * DAY; at <= high; at += step * DAY) {
      ticks.push([at, label(at, { month: "short", day: "numeric" })]);
    }
  }
  if (ticks.length < 2) {
    return [[low, label(low, { month: "short", day: "numeric", year: "numeric" })],
      [high, label(high, { month: "short", day: "numeric", year: "numeric" })]];
  }
  return ticks;
}

// The rating after each round over a dated axis (or the round's number when rounds have no
// time), its μ ± σ band, league thresholds behind it, each round's performance as a linked
// dot, and a read-out of the round under the pointer or the keyboard's cursor.
function ratingChart(pool, entries, scale, leagues, readout, digits) {
  const width = 720, height = 300, left = 48, right = 12, top = 12, bottom = 28;
  const chart = svg("svg", {
    id: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", tabindex: "0",
    "aria-label": "rating after each round; arrow keys move between rounds",
  });
  if (entries.length === 0) {
    return chart;
  }
  const dated = entries.every((e) => e.time);
  const at = dated ? entries.map((e) => Date.parse(e.time)) : entries.map((_, i) => i);
  const first = at[0], last = at[at.length - 1];
  const band = (e) => (known(e.sigma) ? [scale.of(e.mu - e.sigma), scale.of(e.mu + e.sigma)] : [scale.after(e), scale.after(e)]);
  const values = entries.flatMap((e) => [...band(e), scale.after(e), scale.of(e.performance)]).filter(Number.isFinite);
  // Not Math.min(...values): a long history would pass too many arguments.
  let low = values.reduce((a, b) => Math.min(a, b), Infinity);
  let high = values.reduce((a, b) => Math.max(a, b), -Infinity);
  if (!(high > low)) {
    low -= 1;
    high += 1;
  }
  const x = (t) => left + (last > first ? ((t - first) * (width - left - right)) / (last - first) : (width - left - right) / 2);
  const y = (v) => top + ((high - Math.min(high, Math.max(low, v))) * (height - top - bottom)) / (high - low);

  // League thresholds: shaded bands between them, named at the right.
  if (leagues) {
    leagues.tiers.forEach((tier, i) => {
      const floor = known(tier.threshold) ? scale.of(tier.threshold) : -Infinity;
      const next = leagues.tiers[i + 1];
      const ceiling = next && known(next.threshold) ? scale.of(next.threshold) : Infinity;
      if (ceiling <= low || floor >= high) {
        return;
      }
      const y0 = y(Math.min(ceiling, high)), y1 = y(Math.max(floor, low));
      chart.append(
        svg("rect", { x: left, y: y0, width: width - left - right, height: Math.max(0, y1 - y0), class: `league tier${i % 6}` }),
        svg("text", { x: width - right - 4, y: y0 + 12, "text-anchor": "end", class: "league-name" }, tier.name)
      );
    });
  }
  // Horizontal grid with values, and the time axis.
  for (let k = 0; k <= 4; k++) {
    const v = low + ((high - low) * k) / 4;
    chart.append(
      svg("line", { x1: left, x2: width - right, y1: y(v), y2: y(v), class: "grid" }),
      svg("text", { x: left - 4, y: y(v) + 4, "text-anchor": "end" }, fixed(v, 0))
    );
  }
  const ticks = dated ? timeTicks(first, last) : [[first, "round 1"], [last, `round ${entries.length}`]];
  for (const [t, label] of ticks) {
    // A label at either edge reads inward, so that it is not cut off.
    const anchor = x(t) > width - right - 30 ? "end" : x(t) < left + 30 ? "start" : "middle";
    chart.append(
      svg("line", { x1: x(t), x2: x(t), y1: top, y2: height - bottom, class: "grid" }),
      svg("text", { x: x(t), y: height - 8, "text-anchor": anchor }, label)
    );
  }
  const upper = entries.map((e, i) => `${x(at[i])},${y(band(e)[1])}`);
  const lower = entries.map((e, i) => `${x(at[i])},${y(band(e)[0])}`).reverse();
  chart.append(svg("polygon", { class: "band", points: upper.concat(lower).join(" ") }));
  const many = entries.length > MANY_ROUNDS;
  entries.forEach((e, i) => {
    const link = svg("a", { href: `#/pools/${enc(pool)}/rounds/${enc(e.round_id)}`, tabindex: "-1" });
    const dot = svg("circle", {
      class: many ? "performance faint" : "performance", cx: x(at[i]), cy: y(scale.of(e.performance)), r: many ? 1.6 : 3.5,
      "data-round": e.round_id, "data-performance": e.performance, "data-mu": e.mu,
    });
    dot.append(svg("title", {}, `${e.round_id}: performance ${fixed(e.performance)}`));
    link.append(dot);
    chart.append(link);
  });
  chart.append(svg("polyline", { class: "mu", points: entries.map((e, i) => `${x(at[i])},${y(scale.after(e))}`).join(" ") }));

  // The cursor: a marker on the line and the read-out below the chart.
  const marker = svg("circle", { class: "marker", r: 5, cx: -10, cy: -10 });
  chart.append(marker);
  let selected = null;
  const select = (i) => {
    selected = Math.max(0, Math.min(entries.length - 1, i));
    const e = entries[selected];
    marker.setAttribute("cx", x(at[selected]));
    marker.setAttribute("cy", y(scale.after(e)));
    const after = scale.after(e), before = scale.before(e);
    readout.replaceChildren(
      roundLink(pool, e.round_id), dated ? ` · ${day(e.time)}` : "", ` · place ${e.rank} of ${e.entrants}`,
      known(e.expected_rank) ? ` (expected ${fixed(e.expected_rank)})` : "",
      ` · ${scale.name} ${fixed(after, digits)} `, changeOf(after, before, digits)
    );
  };
  chart.addEventListener("keydown", (event) => {
    const step = { ArrowLeft: -1, ArrowRight: 1, Home: -Infinity, End: Infinity }[event.key];
    if (step !== undefined) {
      event.preventDefault();
      select(selected === null ? (step < 0 ? entries.length - 1 : 0) : selected + (Number.isFinite(step) ? step : step > 0 ? entries.length : -entries.length));
    }
  });
  chart.addEventListener("focus", () => selected === null && select(entries.length - 1));
  chart.addEventListener("pointermove", (event) => {
    const box = chart.getBoundingClientRect();
    const px = ((event.clientX - box.left) * width) / box.width;
    let nearest = 0;
    at.forEach((t, i) => {
      if (Math.abs(x(t) - px) < Math.abs(x(at[nearest]) - px)) {
        nearest = i;
      }
    });
    select(nearest);
  });
  return chart;
}

async function roundPage(pool, id, started) {
  const base = `#/pools/${enc(pool)}/rounds/${enc(id)}`;
  const query = choices();
  const cursors = (query.get("pages") || "").split(",").filter(Boolean);
  const cursor = cursors[cursors.length - 1];
  const read = `limit=${PAGE}` + (cursor ? `&cursor=${enc(cursor)}` : "");
  const [round, shown] = await Promise.all([
    api(`/v1/pools/${enc(pool)}/rounds/${enc(id)}?${read}`),
    api(`/v1/pools/${enc(pool)}/display`),
  ]);
  const scale = scaleOf(shown.fixed_range);
  const digits = shown.fixed_range ? 0 : 1;
  const results = round.results || [];
  // Expected places are shown where the pool recorded them (its `expected_ranks` setting).
  const expected = results.some((r) => known(r.expected_rank));
  const pages = (list) => withChoices(base, { pages: list.join(",") });
  const facts = [poolLink(pool), ` · ${round.status}`];
  if (round.time) {
    facts.push(` · ${day(round.time)}`);
  }
  if (known(round.entrants)) {
    facts.push(` · ${round.entrants} entrants`);
  }
  if (round.error) {
    facts.push(` · ${round.error}`);
  }
  showFor(started,
    el("h1", {}, `Round ${id}`),
    el("p", { class: "summary" }, ...facts),
    table(
      [
        { title: "place", class: "number" }, { title: "player", class: "name" },
        ...(expected ? [{ title: "expected", class: "number wide" }] : []),
        { title: "performance", class: "number wide" }, { title: scale.name, class: "number" }, { title: "change", class: "number" },
      ],
      results.map((r) => {
        const after = scale.name === "μ" ? r.mu_after : r.display_rating_after;
        const before = scale.name === "μ" ? r.mu_before : r.display_rating_before;
        return [
          r.rank, playerLink(pool, r.player), ...(expected ? [known(r.expected_rank) ? fixed(r.expected_rank) : "–"] : []),
          fixed(r.performance), fixed(after, digits), changeOf(after, before, digits),
        ];
      }),
      "results",
      `Results of round ${id}`
    ),
    pager(cursors.length ? pages(cursors.slice(0, -1)) : null, round.next_cursor ? pages([...cursors, round.next_cursor]) : null)
  );
}

// A path segment as written; one that is not valid percent-encoding is kept as it is.
function decoded(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

async function route() {
  navigation += 1;
  const started = navigation;
  const parts = location.hash.replace(/^#\/?/, "").split("?")[0].split("/").map(decoded);
  await guarded(async () => {
    if (parts[0] === "pools" && parts[2] === "players" && parts[3] !== undefined) {
      await playerPage(parts[1], parts[3], started);
    } else if (parts[0] === "pools" && parts[2] === "rounds" && parts[3] !== undefined) {
      await roundPage(parts[1], parts.slice(3).join("/"), started);
    } else if (parts[0] === "pools" && parts[1]) {
      await leaderboardPage(parts[1], started);
    } else {
      await poolsPage(started);
    }
  });
  if (started === navigation) {
    document.body.dataset.loaded = location.hash || "#/";
  }
}

window.addEventListener("hashchange", route);
route();
