// The dashboard: a hash-routed page over the service's own API. Pages: #/ (pools),
// #/pools/P (leaderboard, search, distribution), #/pools/P/players/X (rating history chart),
// #/pools/P/rounds/R (its entrants' changes, a page at a time). No library, nothing loaded
// from elsewhere.
"use strict";

const view = document.getElementById("view");
const keyForm = document.getElementById("key-form");
const PAGE = 20;

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
const fixed = (x, digits = 1) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
const poolLink = (pool) => el("a", { href: `#/pools/${enc(pool)}` }, pool);
const playerLink = (pool, player) =>
  el("a", { href: `#/pools/${enc(pool)}/players/${enc(player)}` }, player);
const roundLink = (pool, id) => el("a", { href: `#/pools/${enc(pool)}/rounds/${enc(id)}` }, id);

function table(headings, rows, id) {
  return el(
    "div",
    { class: "scroll" },
    el(
      "table",
      id ? { id } : {},
      el("thead", {}, el("tr", {}, ...headings.map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c)))))
    )
  );
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

async function poolsPage(started) {
  const { pools } = await api("/v1/pools");
  showFor(started,
    el("h1", {}, "Pools"),
    pools.length === 0
      ? el("p", {}, "No pool yet: create one with PUT /v1/pools/{pool}.")
      : table(
          ["pool", "system", "players", "rounds"],
          pools.map((p) => [poolLink(p.name), p.system, p.players ?? "—", p.rounds_applied]),
          "pools"
        )
  );
}

// Previous and next buttons over pages named by their cursors (null for the first page):
// `open(list, navigation)` shows the page whose cursor ends the list.
function pager(cursors, nextCursor, open) {
  const page = (list) => () => {
    navigation += 1;
    guarded(() => open(list, navigation));
  };
  const paging = el("p", { class: "paging" });
  if (cursors.length > 1) {
    const back = el("button", { id: "previous" }, "← Previous");
    back.onclick = page(cursors.slice(0, -1));
    paging.append(back);
  }
  if (nextCursor) {
    const next = el("button", { id: "next" }, "Next →");
    next.onclick = page([...cursors, nextCursor]);
    paging.append(next);
  }
  return paging;
}

async function leaderboardPage(pool, cursors, started) {
  const cursor = cursors[cursors.length - 1];
  const query = `limit=${PAGE}` + (cursor ? `&cursor=${enc(cursor)}` : "");
  const [board, distribution] = await Promise.all([
    api(`/v1/pools/${enc(pool)}/leaderboard?${query}`),
    api(`/v1/pools/${enc(pool)}/distribution?bins=20`),
  ]);
  const search = el("input", { id: "search", type: "search", placeholder: "Find a player by id prefix" });
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
          ...players.map((p) => el("li", {}, playerLink(pool, p.player), ` ${place(p)} · μ ${fixed(p.mu)}`))
        );
      }
    } catch (error) {
      found.replaceChildren(el("li", { class: "error" }, `Search failed: ${error.message}`));
    }
  });
  const paging = pager(cursors, board.next_cursor, (list, now) => leaderboardPage(pool, list, now));
  showFor(started,
    el("h1", {}, pool),
    el("p", {}, `${board.total} players`),
    search,
    found,
    table(
      ["#", "player", "μ", "σ", "μ − kσ"],
      board.entries.map((e) => [e.position, playerLink(pool, e.player), fixed(e.mu), fixed(e.sigma), fixed(e.conservative)]),
      "leaderboard"
    ),
    paging,
    el("h2", {}, "Rating distribution"),
    histogram(distribution)
  );
}

// Bars of the pool's μ histogram.
function histogram({ bins }) {
  const width = 600, height = 160, most = Math.max(1, ...bins.map((b) => b.count));
  const bar = width / Math.max(1, bins.length);
  const chart = svg("svg", { id: "histogram", viewBox: `0 0 ${width} ${height + 20}`, role: "img" });
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

// A player's place on the pool's leaderboard, or why they have none.
function place(rating) {
  return rating.position === null ? "provisional" : `#${rating.position} of ${rating.total}`;
}

async function playerPage(pool, player, started) {
  const base = `/v1/pools/${enc(pool)}/players/${enc(player)}`;
  const [rating, first] = await Promise.all([api(base), api(`${base}/history?limit=1000`)]);
  let entries = first.entries, before = first.next_before;
  while (before !== null && before !== undefined && started === navigation) {
    const page = await api(`${base}/history?limit=1000&before=${before}`);
    entries = entries.concat(page.entries);
    before = page.next_before;
  }
  const oldestFirst = entries.slice().reverse();
  showFor(started,
    el("h1", {}, player),
    el("p", {}, `${place(rating)} in `, poolLink(pool), ` · μ ${fixed(rating.mu)} · σ ${fixed(rating.sigma)} · ${oldestFirst.length} rounds`),
    ratingChart(pool, oldestFirst),
    el("p", { class: "legend" }, "Line: μ after each round; band: μ ± σ; dots: the round's performance (each links to its round)."),
    table(
      ["round", "rank", "performance", "μ", "change"],
      entries.map((e) => [roundLink(pool, e.round_id), `${e.rank} / ${e.entrants}`, fixed(e.performance), fixed(e.mu), fixed(e.delta)]),
      "history"
    )
  );
}

// μ after each round with a μ ± σ band, and each round's performance as a linked dot.
function ratingChart(pool, entries) {
  const width = 640, height = 260, pad = 36;
  const values = entries.flatMap((e) => [e.mu - (e.sigma || 0), e.mu + (e.sigma || 0), e.performance]);
  // Not Math.min(...values): a long history would pass too many arguments.
  const low = values.reduce((a, b) => Math.min(a, b), Infinity);
  const high = values.reduce((a, b) => Math.max(a, b), -Infinity);
  const span = high > low ? high - low : 1;
  const x = (i) => pad + (entries.length > 1 ? (i * (width - 2 * pad)) / (entries.length - 1) : (width - 2 * pad) / 2);
  const y = (v) => height - pad - ((v - low) / span) * (height - 2 * pad);
  const chart = svg("svg", { id: "chart", viewBox: `0 0 ${width} ${height}`, role: "img" });
  if (entries.length === 0) {
    return chart;
  }
  const upper = entries.map((e, i) => `${x(i)},${y(e.mu + (e.sigma || 0))}`);
  const lower = entries.map((e, i) => `${x(i)},${y(e.mu - (e.sigma || 0))}`).reverse();
  chart.append(
    svg("polygon", { class: "band", points: upper.concat(lower).join(" ") }),
    svg("polyline", { class: "mu", points: entries.map((e, i) => `${x(i)},${y(e.mu)}`).join(" ") }),
    svg("text", { x: 2, y: y(high) + 4 }, fixed(high, 0)),
    svg("text", { x: 2, y: y(low) + 4 }, fixed(low, 0))
  );
  entries.forEach((e, i) => {
    const link = svg("a", { href: `#/pools/${enc(pool)}/rounds/${enc(e.round_id)}` });
    const dot = svg("circle", {
      class: "performance", cx: x(i), cy: y(e.performance), r: 4,
      "data-round": e.round_id, "data-performance": e.performance, "data-mu": e.mu,
    });
    dot.append(svg("title", {}, `${e.round_id}: performance ${fixed(e.performance)}, μ ${fixed(e.mu)}`));
    link.append(dot);
    chart.append(link);
  });
  return chart;
}

async function roundPage(pool, id, cursors, started) {
  const cursor = cursors[cursors.length - 1];
  const query = `limit=${PAGE}` + (cursor ? `&cursor=${enc(cursor)}` : "");
  const round = await api(`/v1/pools/${enc(pool)}/rounds/${enc(id)}?${query}`);
  const results = round.results || [];
  const paging = pager(cursors, round.next_cursor, (list, now) => roundPage(pool, id, list, now));
  showFor(started,
    el("h1", {}, `Round ${id}`),
    el("p", {}, poolLink(pool), ` · ${round.status}`, round.error ? ` · ${round.error}` : ""),
    table(
      ["rank", "player", "performance", "μ before", "μ after", "change"],
      results.map((r) => [r.rank, playerLink(pool, r.player), fixed(r.performance), fixed(r.mu_before), fixed(r.mu_after), fixed(r.delta)]),
      "results"
    ),
    paging
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
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decoded);
  await guarded(async () => {
    if (parts[0] === "pools" && parts[2] === "players" && parts[3] !== undefined) {
      await playerPage(parts[1], parts[3], started);
    } else if (parts[0] === "pools" && parts[2] === "rounds" && parts[3] !== undefined) {
      await roundPage(parts[1], parts[3], [null], started);
    } else if (parts[0] === "pools" && parts[1]) {
      await leaderboardPage(parts[1], [null], started);
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
