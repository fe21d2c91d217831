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
  const LAYOUT = {
    margin: { l: 50, r: 10, t: 36, b: 70 },
    height: 300,
    legend: { orientation: "h", y: -0.28 },
    font: { family: "system-ui, sans-serif", size: 12 },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
  };
  const CONFIG = { displaylogo: false, responsive: true };

  function plot(id, traces, layout) {
    const el = document.getElementById(id);
    if (!el || typeof Plotly === "undefined") return;
    Plotly.react(el, traces, Object.assign({}, LAYOUT, layout), CONFIG);
    el.dataset.traces = String(traces.length);
  }

  // --- a run ---------------------------------------------------------------------

  function runCharts(data) {
    const cycles = data.cycles.map((c) => c.cycle);
    const tools = new Set();
    data.cycles.forEach((c) => Object.keys(c.tools).forEach((t) => tools.add(t)));
    const toolTraces = Array.from(tools).sort().map((tool, i) => ({
      type: "bar", name: plotText(tool), x: cycles,
      y: data.cycles.map((c) => c.tools[tool] || 0), marker: { color: COLORS[i % COLORS.length] },
    }));
    plot("chart-tools", toolTraces, {
      title: { text: "Tool calls by tool" }, barmode: "stack", showlegend: true,
      xaxis: { title: { text: "cycle" }, dtick: 1 },
    });
    const metric = (name) => data.cycles.map((c) => c.metrics[name]);
    plot("chart-lengths", [
      { type: "scatter", mode: "lines+markers", name: "response chars", x: cycles, y: metric("response_chars") },
      { type: "scatter", mode: "lines+markers", name: "reflection chars", x: cycles, y: metric("reflection_chars") },
      { type: "scatter", mode: "lines+markers", name: "memory-write chars", x: cycles, y: metric("memory_write_chars") },
    ], { title: { text: "Response and reflection length" }, xaxis: { title: { text: "cycle" }, dtick: 1 } });
    plot("chart-tokens", [
      { type: "bar", name: "prompt tokens", x: cycles, y: metric("prompt_tokens") },
      { type: "bar", name: "completion tokens", x: cycles, y: metric("completion_tokens") },
    ], { title: { text: "Tokens" }, barmode: "stack", xaxis: { title: { text: "cycle" }, dtick: 1 } });
    plot("chart-llm", [
      { type: "bar", name: "LLM seconds", x: cycles, y: metric("llm_seconds"), marker: { color: "#7c3aed" } },
      { type: "scatter", mode: "lines+markers", name: "LLM calls", x: cycles, y: metric("llm_calls"), yaxis: "y2" },
    ], {
      title: { text: "LLM time" }, xaxis: { title: { text: "cycle" }, dtick: 1 },
      yaxis: { title: { text: "seconds" } },
      yaxis2: { title: { text: "calls" }, overlaying: "y", side: "right" },
    });
    const sim = data.similarity;
    const labels = sim.cycles.map((c) => "cycle " + c);
    const levels = {};
    data.cycles.forEach((c) => { levels[c.cycle] = c.level; });
    const annotations = [];
    sim.cycles.forEach((c, i) => {
      const lvl = levels[c];
      if (lvl === "high" || lvl === "moderate") {
        annotations.push({ x: labels[i], y: labels[i], text: lvl === "high" ? "H" : "M",
          showarrow: false, font: { color: "#fff", size: 11 } });
      }
    });
    plot("chart-similarity", [{
      type: "heatmap", x: labels, y: labels, z: sim.values, zmin: 0, zmax: 1,
      colorscale: [[0, "#f8fafc"], [sim.moderate_threshold, "#fde68a"],
        [sim.high_threshold, "#f97316"], [1, "#b91c1c"]],
      hovertemplate: "%{y} vs %{x}: %{z:.3f}<extra></extra>",
      colorbar: { tickvals: [0, sim.moderate_threshold, sim.high_threshold, 1],
        ticktext: ["0", "moderate " + sim.moderate_threshold, "high " + sim.high_threshold, "1"] },
    }], {
      height: Math.max(320, 60 + 28 * sim.cycles.length),
      title: { text: "Reflection similarity (H/M: the level that cycle's assessment gave)" },
      annotations: annotations, yaxis: { autorange: "reversed" },
    });
  }

  // --- compare -------------------------------------------------------------------

  function compareCharts(data) {
    for (const [metric, label] of Object.entries(data.metrics)) {
      const traces = data.series.map((s, i) => ({
        type: "scatter", mode: "lines+markers", name: plotText(s.label),
        x: s.cycles, y: s.values[metric], line: { color: COLORS[i % COLORS.length] },
      }));
      plot("chart-" + metric, traces, {
        title: { text: plotText(label) }, xaxis: { title: { text: "cycle" }, dtick: 1 },
      });
    }
  }

  function draw() {
    if (!DATA) return;
    if (PAGE === "run") runCharts(DATA);
    if (PAGE === "compare") compareCharts(DATA);
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

  const FIELDS = ["model", "backend", "experiment", "step", "llm_calls", "memory_keys"];
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

  draw();
  if (PAGE === "replay") replayControls();
  connect();
  window.contreact = { clean: clean, plotText: plotText, refresh: refresh };
})();
