// ContReAct dashboard: charts and live updates. Agent text never goes through
// innerHTML: the server renders it (escaped, control characters neutralized); this
// script only moves server-rendered nodes, sets textContent, and hands Plotly labels
// it escapes first.
"use strict";

(function () {
  const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]/g;
  const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

  // The same rules as contreact_ui/text.py display().
  function clean(value) {
    if (value === null || value === undefined) return "";
    return String(value).replace(/\r\n/g, "\n").replace(ANSI, "").replace(CONTROL, "\ufffd");
  }

  // Plotly reads a few HTML-like tags in labels: escape them so a label is only text.
  function plotText(value) {
    return clean(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function pageData(doc) {
    const node = (doc || document).getElementById("page-data");
    return node ? JSON.parse(node.textContent) : null;
  }

  let DATA = pageData();
  const PAGE = document.body.dataset.page;
  const COLORS = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777",
    "#65a30d", "#475569"];
  const DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"];
  const SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "cross"];
  // Legend above the plot, under the title (TITLE_ROOM px from the top, however tall
  // the chart): never over an axis title, nor over the title when it has many rows.
  const TITLE_ROOM = 28;
  const LAYOUT = {
    margin: { l: 56, r: 16, t: 64, b: 72 },
    height: 320,
    title: { y: 0.97, yanchor: "top", x: 0.01, xanchor: "left", font: { size: 13 } },
    legend: { orientation: "h", x: 0, xanchor: "left", yref: "container", yanchor: "top",
      font: { size: 11 } },
    hovermode: "x unified",
    font: { family: "system-ui, sans-serif", size: 12 },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
  };
  // Charts follow their cards: a ResizeObserver gives each chart its card's width when
  // the card changes (a window resize, a grid that reflows), and the card is as tall as
  // its chart (Plotly's own "responsive" resizing measured a card shorter than the
  // chart, which then spilled over what follows it).
  const CONFIG = { displaylogo: false, responsive: false };
  const MAX_TICKS = 12;
  const MIN_PLOT_HEIGHT = 160; // px of plot under the title and the legend
  const LEGEND_MAX_HEIGHT = 600; // px; past it the legend scrolls
  const watched = new WeakSet();
  const resizes = typeof ResizeObserver === "undefined" ? null : new ResizeObserver((entries) => {
    for (const entry of entries) follow(entry.target, Math.floor(entry.contentRect.width));
  });

  function plot(id, traces, layout) {
    const el = document.getElementById(id);
    if (!el || typeof Plotly === "undefined") return;
    const merged = Object.assign({}, LAYOUT, layout);
    merged.title = Object.assign({}, LAYOUT.title, layout.title || {});
    merged.legend = Object.assign({ maxheight: LEGEND_MAX_HEIGHT,
      y: 1 - TITLE_ROOM / merged.height }, LAYOUT.legend, layout.legend || {});
    el.dataset.height = String(merged.height);
    el.style.height = merged.height + "px";
    el.dataset.traces = String(traces.length);
    Plotly.react(el, traces, merged, CONFIG).then(() => fit(el));
    if (resizes && !watched.has(el)) { watched.add(el); resizes.observe(el); }
  }

  function follow(el, width) {
    const full = el._fullLayout;
    if (!full || !width || Math.abs(full.width - width) < 1) return;
    Plotly.relayout(el, { width: width }).then(() => fit(el));
  }

  // Taller than asked when a legend of many entries leaves the plot under
  // MIN_PLOT_HEIGHT (compare by run: one entry a run); back to the height asked when
  // it fits again.
  function fit(el) {
    const full = el._fullLayout;
    if (!full || !full._size) return;
    const asked = Number(el.dataset.height) || full.height;
    const want = Math.max(asked, Math.ceil(full.height + MIN_PLOT_HEIGHT - full._size.h));
    if (Math.abs(want - full.height) < 1) return;
    el.style.height = want + "px";
    Plotly.relayout(el, { height: want, "legend.y": 1 - TITLE_ROOM / want });
  }

  // A step between ticks that is a whole number, 1, 2 or 5 times a power of ten, and
  // gives at most MAX_TICKS ticks over ``span`` (a count never reads 2, 2, 3, 3).
  function wholeStep(span) {
    const rough = Math.max(1, span / MAX_TICKS);
    const power = Math.pow(10, Math.floor(Math.log10(rough)));
    for (const m of [1, 2, 5, 10]) if (m * power >= rough) return m * power;
    return 10 * power;
  }

  function cycleAxis(cycles, extra) {
    const span = cycles.length ? cycles[cycles.length - 1] - cycles[0] + 1 : 1;
    return Object.assign({ title: { text: "cycle" }, tickmode: "linear",
      tick0: cycles.length ? cycles[0] : 1, dtick: wholeStep(span), tickformat: "d",
      automargin: true }, extra || {});
  }

  function countAxis(values, extra) {
    const top = Math.max(1, ...values.filter((v) => v !== null && v !== undefined));
    return Object.assign({ rangemode: "tozero", tickmode: "linear", tick0: 0,
      dtick: wholeStep(top), tickformat: ",d", automargin: true }, extra || {});
  }

  // Lines and markers differ by dash and symbol too, so equal series stay visible.
  function line(name, x, y, i, extra) {
    return Object.assign({ type: "scatter", mode: "lines+markers", name: name, x: x, y: y,
      connectgaps: false, line: { color: COLORS[i % COLORS.length], dash: DASHES[i % DASHES.length] },
      marker: { symbol: SYMBOLS[i % SYMBOLS.length], size: 6 } }, extra || {});
  }

  // --- a run ---------------------------------------------------------------------

  // A cycle without an end (running, or the one a failed run stopped in) has no final
  // figures: left out of the series (null, not 0) and shaded with what it is.
  function unfinished(data) {
    const status = data.run ? data.run.status : "";
    const what = ["failed", "cancelled", "stopped"].includes(status) ? status
      : ["completed"].includes(status) ? "unfinished" : "running";
    return data.cycles.filter((c) => !c.ended_by).map((c) => ({ cycle: c.cycle, what: what }));
  }

  function shading(open) {
    const shapes = open.map((o) => ({ type: "rect", xref: "x", yref: "paper", x0: o.cycle - 0.5,
      x1: o.cycle + 0.5, y0: 0, y1: 1, fillcolor: o.what === "running" ? "#dbeafe" : "#fee2e2",
      opacity: 0.6, line: { width: 0 }, layer: "below" }));
    const annotations = open.map((o) => ({ x: o.cycle, xref: "x", y: 1, yref: "paper",
      yanchor: "top", text: o.what, showarrow: false, font: { size: 10, color: "#475569" } }));
    return { shapes: shapes, annotations: annotations };
  }

  function runCharts(data) {
    const cycles = data.cycles.map((c) => c.cycle);
    const open = unfinished(data);
    const done = new Set(data.cycles.filter((c) => c.ended_by).map((c) => c.cycle));
    const shade = shading(open);
    const axis = cycleAxis(cycles);
    const value = (c, v) => (done.has(c.cycle) ? v : null);
    const metric = (name) => data.cycles.map((c) => value(c, c.metrics[name]));
    const mark = (id) => {
      const el = document.getElementById(id);
      if (el) el.dataset.unfinished = open.map((o) => o.cycle + ":" + o.what).join(",");
    };
    const tools = new Set();
    data.cycles.forEach((c) => Object.keys(c.tools).forEach((t) => tools.add(t)));
    const toolTraces = Array.from(tools).sort().map((tool, i) => ({
      type: "bar", name: plotText(tool), x: cycles,
      y: data.cycles.map((c) => value(c, c.tools[tool] || 0)),
      marker: { color: COLORS[i % COLORS.length] },
    }));
    const perCycle = data.cycles.map((c) => value(c, Object.values(c.tools).reduce((a, b) => a + b, 0)));
    plot("chart-tools", toolTraces, Object.assign({
      title: { text: toolTraces.length ? "Tool calls by tool" : "Tool calls by tool: none was called" },
      barmode: "stack", showlegend: true, xaxis: axis, yaxis: countAxis(perCycle),
    }, shade));
    mark("chart-tools");
    const lengths = [["response chars", "response_chars"], ["reflection chars", "reflection_chars"],
      ["memory-write chars", "memory_write_chars"]];
    plot("chart-lengths", lengths.map(([label, name], i) => line(label, cycles, metric(name), i)),
      Object.assign({ title: { text: "Response and reflection length" }, xaxis: axis,
        yaxis: countAxis([].concat(...lengths.map(([, n]) => metric(n)))) }, shade));
    mark("chart-lengths");
    const tokens = data.cycles.map((c) => value(c, c.metrics.prompt_tokens + c.metrics.completion_tokens));
    plot("chart-tokens", [
      { type: "bar", name: "prompt tokens", x: cycles, y: metric("prompt_tokens"), marker: { color: COLORS[0] } },
      { type: "bar", name: "completion tokens", x: cycles, y: metric("completion_tokens"), marker: { color: COLORS[3] } },
    ], Object.assign({ title: { text: "Tokens" }, barmode: "stack", xaxis: axis, yaxis: countAxis(tokens) }, shade));
    mark("chart-tokens");
    const calls = metric("llm_calls");
    plot("chart-llm", [
      { type: "bar", name: "LLM seconds", x: cycles, y: metric("llm_seconds"), marker: { color: "#7c3aed" } },
      line("LLM calls", cycles, calls, 1, { yaxis: "y2" }),
    ], Object.assign({
      title: { text: "LLM time" }, xaxis: axis,
      yaxis: { title: { text: "seconds" }, rangemode: "tozero", automargin: true },
      yaxis2: countAxis(calls, { title: { text: "calls" }, overlaying: "y", side: "right", showgrid: false }),
      margin: Object.assign({}, LAYOUT.margin, { r: 56 }),
    }, shade));
    mark("chart-llm");
    similarityChart(data);
  }

  function similarityChart(data) {
    const sim = data.similarity;
    if (!document.getElementById("chart-similarity")) return;
    const colorscale = [[0, "#f8fafc"], [sim.moderate_threshold, "#fde68a"],
      [sim.high_threshold, "#f97316"], [1, "#b91c1c"]];
    const colorbar = { tickvals: [0, sim.moderate_threshold, sim.high_threshold, 1],
      ticktext: ["0", "moderate " + sim.moderate_threshold, "high " + sim.high_threshold, "1"] };
    if (sim.view === "band") {
      const lags = sim.band.map((_, k) => k + 1);
      plot("chart-similarity", [{
        type: "heatmap", x: sim.cycles, y: lags, z: sim.band, zmin: 0, zmax: 1, colorscale: colorscale,
        hovertemplate: "cycle %{x} vs %{y} cycle(s) before: %{z:.3f}<extra></extra>", colorbar: colorbar,
      }], {
        height: 380, hovermode: "closest",
        title: { text: "Reflection similarity to the " + sim.band_width + " cycles before" },
        xaxis: cycleAxis(sim.cycles),
        yaxis: { title: { text: "cycles back" }, autorange: "reversed", dtick: 5, automargin: true },
      });
      return;
    }
    const levels = {};
    data.cycles.forEach((c) => { levels[c.cycle] = c.level; });
    const annotations = [];
    sim.cycles.forEach((c) => {
      const lvl = levels[c];
      if (lvl === "high" || lvl === "moderate") {
        annotations.push({ x: c, y: c, text: lvl === "high" ? "H" : "M",
          showarrow: false, font: { color: "#fff", size: 11 } });
      }
    });
    const size = Math.min(720, Math.max(320, 90 + 22 * sim.cycles.length));
    plot("chart-similarity", [{
      type: "heatmap", x: sim.cycles, y: sim.cycles, z: sim.values, zmin: 0, zmax: 1,
      colorscale: colorscale, xgap: 1, ygap: 1,
      hovertemplate: "cycle %{y} vs cycle %{x}: %{z:.3f}<extra></extra>", colorbar: colorbar,
    }], {
      height: size, hovermode: "closest",
      title: { text: "Reflection similarity (H/M: the level that cycle's assessment gave)" },
      annotations: annotations,
      xaxis: cycleAxis(sim.cycles, { constrain: "domain" }),
      yaxis: cycleAxis(sim.cycles, { autorange: "reversed", scaleanchor: "x" }),
    });
  }

  // --- compare -------------------------------------------------------------------

  function compareCharts(data) {
    for (const [metric, label] of Object.entries(data.metrics)) {
      const traces = data.series.map((s, i) => line(plotText(s.label), s.cycles, s.values[metric], i));
      const cycles = Array.from(new Set([].concat(...data.series.map((s) => s.cycles)))).sort((a, b) => a - b);
      plot("chart-" + metric, traces, {
        title: { text: plotText(label) }, xaxis: cycleAxis(cycles), yaxis: { rangemode: "tozero", automargin: true },
      });
    }
  }

  // --- the timeline: where each cycle's time went -------------------------------------

  function timelineChart(data) {
    const rows = data.by_cycle;
    if (!rows || !rows.length) return;
    const cycles = rows.map((r) => r.cycle);
    const parts = [["LLM calls", "llm_s", "#7c3aed"], ["tool calls", "tool_s", "#059669"],
      ["operator", "operator_s", "#d97706"], ["the rest", "other_s", "#94a3b8"]];
    plot("chart-time", parts.map(([name, key, color]) => ({
      type: "bar", name: name, x: cycles, y: rows.map((r) => (r.total_s === null ? null : r[key])),
      marker: { color: color },
    })), {
      title: { text: "Seconds per cycle, by what they went to" }, barmode: "stack",
      xaxis: cycleAxis(cycles), yaxis: { title: { text: "seconds" }, rangemode: "tozero", automargin: true },
    });
  }

  function draw() {
    if (!DATA) return;
    if (PAGE === "run") runCharts(DATA);
    if (PAGE === "compare") compareCharts(DATA);
    if (PAGE === "timeline") timelineChart(DATA);
  }

  // --- live updates ----------------------------------------------------------------

  // Replace every [data-live] region with the same region of a fresh copy of this
  // page, rendered by the server (parsed by DOMParser: its scripts never run).
  let refreshing = false;
  let again = false;
  async function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    try {
      const response = await fetch(location.href, { headers: { Accept: "text/html" } });
      if (!response.ok) return;
      const doc = new DOMParser().parseFromString(await response.text(), "text/html");
      document.querySelectorAll("[data-live]").forEach((region) => {
        const fresh = doc.querySelector('[data-live="' + CSS.escape(region.dataset.live) + '"]');
        if (!fresh) return;
        keepOpen(region, fresh);
        region.replaceWith(document.adoptNode(fresh));
      });
      const fresher = pageData(doc);
      if (fresher) {
        DATA = fresher;
        const node = document.getElementById("page-data");
        if (node) node.textContent = JSON.stringify(fresher);
      }
      draw();
      document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
    } finally {
      refreshing = false;
      if (again) { again = false; setTimeout(refresh, 500); }
    }
  }

  function keepOpen(old, fresh) {
    old.querySelectorAll("details[open]").forEach((d) => {
      const key = d.dataset.seq || (d.closest("[id]") || {}).id;
      if (!key) return;
      fresh.querySelectorAll("details").forEach((f) => {
        if ((f.dataset.seq || (f.closest("[id]") || {}).id) === key) f.open = true;
      });
    });
  }

  // contreact_events.config.spend.cost_text: unknown is "?", never a zero
  function costText(cost, unknown) {
    if (unknown && !cost) return "?";
    const shown = "$" + (cost < 100 ? cost.toFixed(4) : cost.toFixed(2));
    return unknown ? ">=" + shown : shown;
  }

  const FIELDS = ["model", "backend", "host", "experiment", "step", "llm_calls", "memory_keys"];
  function updateRunRows(rows) {
    const filters = DATA.filters;
    let missing = false;
    for (const row of rows) {
      const tr = document.querySelector('tr[data-run="' + CSS.escape(row.run_id) + '"]');
      if (!tr) {
        const matches = ["status", "model", "backend", "experiment"].every(
          (f) => !filters[f] || filters[f] === row[f]) && (!filters.q || row.run_id.includes(filters.q));
        if (matches) missing = true;
        continue;
      }
      const set = (field, text) => {
        const td = tr.querySelector('[data-field="' + field + '"]');
        if (td && td.textContent !== text) td.textContent = text;
      };
      FIELDS.forEach((f) => set(f, clean(row[f])));
      set("cycle", row.cycle + "/" + row.cycle_count);
      set("tokens", (row.prompt_tokens + row.completion_tokens).toLocaleString("en-US"));
      set("cost", costText(row.cost, row.uncosted_calls));
      set("updated_at", clean(row.updated_at || "-").replace("T", " ").slice(0, 19));
      const status = tr.querySelector('[data-field="status"]');
      const badge = status && status.querySelector(".status");
      if (badge && badge.textContent !== row.status) {
        badge.textContent = clean(row.status);
        badge.className = "status status-" + clean(row.status).replace(/[^a-z_]/g, "");
      }
    }
    if (missing) refresh().then(() => { /* new runs come in with the fresh table */ });
    const refreshed = document.body.dataset.updates || "0";
    document.body.dataset.updates = String(Number(refreshed) + 1);
  }

  function runOfPage() {
    if (!DATA) return null;
    return DATA.run_id || (DATA.run && DATA.run.run_id) || null;
  }

  function connect() {
    if (!window.EventSource || PAGE === "compose" || PAGE === "error") return;
    if (PAGE !== "runs" && !document.querySelector("[data-live]")) return; // nothing to update
    const run = runOfPage();
    const url = "/stream" + (run ? "?run=" + encodeURIComponent(run) : "");
    const source = new EventSource(url);
    const live = document.getElementById("live");
    let timer = null;
    source.addEventListener("hello", () => { if (live) live.classList.add("on"); });
    source.addEventListener("error", () => { if (live) live.classList.remove("on"); });
    source.addEventListener("change", (message) => {
      const body = JSON.parse(message.data);
      if (PAGE === "runs" && !body.everything) { updateRunRows(body.runs); return; }
      if (timer) return; // changes that come together make one refresh
      timer = setTimeout(() => { timer = null; refresh(); }, 250);
    });
  }

  // --- replay: keys and the slider ---------------------------------------------------

  function replayControls() {
    const range = document.getElementById("seq-range");
    const input = document.getElementById("seq-input");
    if (range && input) {
      range.addEventListener("input", () => { input.value = range.value; });
      range.addEventListener("change", () => { location.search = "?seq=" + range.value; });
    }
    document.addEventListener("keydown", (e) => {
      if (e.target && ["INPUT", "TEXTAREA", "SELECT"].includes(e.target.tagName)) return;
      const target = { ArrowLeft: "prev", ArrowRight: "next", Home: "first", End: "last" }[e.key];
      const link = target && document.getElementById(target);
      if (link) { e.preventDefault(); location.href = link.href; }
    });
  }

  // --- search: what the page does while the server searches ----------------------------

  // The first semantic search may wait for the embedding model (the dashboard loads it
  // in the background when it starts): the page says so at once, and says when the
  // model is ready (the server renders the line; this only moves it in).
  function searchControls() {
    const form = document.getElementById("search-form");
    const status = document.getElementById("search-status");
    const button = document.getElementById("search-submit");
    if (!form || !status) return;
    form.addEventListener("submit", () => {
      const model = document.getElementById("search-model");
      const semantic = form.elements.mode && form.elements.mode.value === "semantic";
      const ready = !model || model.dataset.state === "ready";
      status.textContent = !semantic ? "Searching…" : ready ? "Searching by meaning…"
        : "Loading the embedding model, then searching by meaning (the first time takes "
          + "about ten seconds)…";
      status.hidden = false;
      form.setAttribute("aria-busy", "true");
      if (button) button.disabled = true;
    });
    window.addEventListener("pageshow", (event) => {
      if (!event.persisted) return; // back to a page kept as it was left: searchable again
      status.hidden = true;
      form.removeAttribute("aria-busy");
      if (button) button.disabled = false;
    });
    watchModel();
  }

  function watchModel() {
    const waiting = () => {
      const model = document.getElementById("search-model");
      return model && model.dataset.state === "loading" ? model : null;
    };
    if (!waiting()) return;
    const timer = setInterval(async () => {
      const model = waiting();
      if (!model) { clearInterval(timer); return; }
      try {
        const response = await fetch("/search", { headers: { Accept: "text/html" } });
        if (!response.ok) return;
        const doc = new DOMParser().parseFromString(await response.text(), "text/html");
        const fresh = doc.getElementById("search-model");
        if (fresh && fresh.dataset.state !== model.dataset.state) {
          model.replaceWith(document.adoptNode(fresh));
        }
      } catch (error) { /* the next tick asks again */ }
    }, 2000);
  }

  draw();
  if (PAGE === "replay") replayControls();
  if (PAGE === "search") searchControls();
  connect();
  window.contreact = { clean: clean, plotText: plotText, refresh: refresh };
})();
