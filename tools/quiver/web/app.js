/* app.js — the logic of `quiver serve`'s page (plain JS, no framework,
   embedded in the CLI). Talks only to the JSON API (docs/serve.md): the
   schema from /api/info, pages of rows from /api/rows (filter, sort and
   shuffle computed by the server through the dataset layer), streamed
   statistics from /api/stats, images and audio from /api/cell. Every cell
   is put in the page with textContent (never innerHTML), so data shows as
   text whatever it holds. */
"use strict";

const PAGE = 100;
const SHORT = 160; /* characters of a string shown before "more" */
const LIST_SHOWN = 8;
const PAYLOAD = ["image", "audio", "media"]; /* kinds read through /api/cell */

const state = {
  info: null, split: null, cols: [], offset: 0, numRows: 0, rows: [],
  where: "", sort: "", desc: false, seed: "", sel: -1, loadToken: 0, stats: null,
};

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

/* JSON as quiver writes it may hold bare NaN / Infinity (Python's json
   reads them, JSON.parse does not): turn those into strings. */
function parseJSON(text) {
  try { return JSON.parse(text); } catch (e) { /* fall through */ }
  let out = "", inStr = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inStr) {
      out += c;
      if (c === "\\") { out += text[++i]; } else if (c === '"') inStr = false;
      continue;
    }
    if (c === '"') { inStr = true; out += c; continue; }
    const m = /^(-?Infinity|NaN)/.exec(text.slice(i, i + 9));
    if (m) { out += '"' + m[1] + '"'; i += m[1].length - 1; continue; }
    out += c;
  }
  return JSON.parse(out);
}

function fmtBytes(n) {
  if (n < 0) return "?";
  const u = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}

const fmtInt = (n) => Number(n).toLocaleString("en-US");

function viewParams() {
  const p = new URLSearchParams();
  if (state.split) p.set("split", state.split);
  if (state.where) p.set("where", state.where);
  if (state.sort) p.set("sort", state.sort + (state.desc ? ":desc" : ""));
  if (state.seed !== "") p.set("seed", state.seed);
  return p;
}

async function getJSON(url, signal) {
  const r = await fetch(url, { signal });
  const text = await r.text();
  let body;
  try { body = parseJSON(text); } catch (e) { body = { error: text || r.statusText }; }
  if (!r.ok) { const err = new Error(body.error || r.statusText); err.status = r.status; throw err; }
  return body;
}

function setStatus(text, busy) {
  const s = $("status");
  s.textContent = text || "";
  s.classList.toggle("busy", !!busy);
}

/* ---------------------------------------------------------------- info */

function featureText(f) {
  if (!f) return "";
  switch (f._type) {
    case "Value": return "Value(" + f.dtype + ")";
    case "ClassLabel": return "ClassLabel(" + (f.names ? f.names.length + " names" : "") + ")";
    case "List": case "Sequence": case "LargeList":
      return f._type + "(" + featureText(f.feature) + (f.length !== undefined && f.length !== -1 ? ", length=" + f.length : "") + ")";
    case undefined:
      if (typeof f === "object") return "{" + Object.keys(f).map((k) => k + ": " + featureText(f[k])).join(", ") + "}";
      return "";
    default: return f._type + (f.dtype ? "(" + f.dtype + ")" : "");
  }
}

function renderSchema() {
  const ul = $("schema");
  ul.replaceChildren();
  for (const c of state.cols) {
    const li = el("li");
    const line = el("div", "col-line");
    line.append(el("span", "col-name", c.name));
    const b = el("button", "link", "stats");
    b.type = "button";
    b.setAttribute("aria-label", "statistics of " + c.name);
    b.addEventListener("click", () => startStats(c.name));
    line.append(b);
    li.append(line, el("div", "col-type", c.type));
    const ft = featureText(c.feature);
    if (ft && !(c.feature && c.feature._type === "Value")) li.append(el("div", "col-feat", ft));
    if (c.names) {
      const chips = el("div");
      c.names.slice(0, 30).forEach((n, i) => chips.append(el("span", "chip", i + ": " + n)));
      if (c.names.length > 30) chips.append(el("span", "chip", "+" + (c.names.length - 30)));
      li.append(chips);
    }
    ul.append(li);
  }
  const sel = $("sort-col");
  sel.replaceChildren(new Option("(none)", ""));
  for (const c of state.cols) if (["number", "bool", "string", "label", "binary"].includes(c.kind)) sel.append(new Option(c.name, c.name));
  sel.value = state.sort;
}

function renderFacts() {
  const s = state.info.splits.find((x) => x.name === state.split);
  const f = $("facts");
  f.replaceChildren();
  const add = (k, v) => { const d = el("span"); d.append(el("b", null, v), " " + k); f.append(d); };
  add("rows", fmtInt(s.num_rows));
  add("columns", s.num_columns);
  add(s.files.length === 1 ? "file" : "files", s.files.length + " · " + fmtBytes(s.size));
}

function chooseSplit(name) {
  state.split = name;
  const s = state.info.splits.find((x) => x.name === name);
  state.cols = s.columns;
  state.where = ""; state.sort = ""; state.seed = ""; state.desc = false;
  $("filter").value = ""; $("seed").value = ""; $("sort-dir").value = "asc";
  renderSchema();
  renderFacts();
  renderHead();
  closeStats();
  load(0);
}

/* ---------------------------------------------------------------- table */

function renderHead() {
  const tr = $("head");
  tr.replaceChildren(el("th", "rn", "#"));
  for (const c of state.cols) {
    const th = el("th");
    if (c.name === state.sort) th.className = "sorted" + (state.desc ? " desc" : "");
    const b = el("button", null, c.name);
    b.type = "button";
    b.title = "sort by " + c.name;
    b.addEventListener("click", () => {
      if (state.sort === c.name) state.desc = !state.desc; else { state.sort = c.name; state.desc = false; }
      state.seed = ""; $("seed").value = "";
      $("sort-col").value = state.sort; $("sort-dir").value = state.desc ? "desc" : "asc";
      renderHead();
      load(0);
    });
    th.append(b, el("span", "t", headType(c)));
    tr.append(th);
  }
}

function headType(c) {
  if (c.names) return "ClassLabel";
  if (c.feature && c.feature._type && c.feature._type !== "Value") return featureText(c.feature);
  return c.type;
}

function cellURL(row, col) {
  const p = viewParams();
  p.set("row", row);
  p.set("column", col);
  return "/api/cell?" + p.toString();
}

function collapsible(full, short, cls) {
  const span = el("span", cls, short);
  const more = el("button", "more", "more");
  more.type = "button";
  more.addEventListener("click", (ev) => {
    ev.stopPropagation();
    const open = more.textContent === "more";
    span.textContent = open ? full : short;
    more.textContent = open ? "less" : "more";
  });
  const wrap = el("span");
  wrap.append(span, " ", more);
  return wrap;
}

function valueNode(c, v, row, full) {
  if (v === undefined && PAYLOAD.includes(c.kind)) v = {}; /* not fetched: ask /api/cell */
  if (v === null || v === undefined) return el("span", "null", "null");
  switch (c.kind) {
    case "label": {
      const w = el("span");
      const name = c.names && v >= 0 && v < c.names.length ? c.names[v] : null;
      w.append(el("span", null, name !== null ? name : String(v)));
      if (name !== null) w.append(" ", el("span", "label-id", "(" + v + ")"));
      return w;
    }
    case "image": {
      if (typeof v === "object" && v.bytes === null) return el("span", "mono", v.path || "null");
      const img = el("img", full ? null : "thumb");
      img.loading = "lazy";
      img.alt = c.name + " of row " + row;
      img.src = cellURL(row, c.name);
      img.addEventListener("error", () => img.replaceWith(el("span", "null", "null or not an image the browser decodes")));
      return img;
    }
    case "audio": {
      if (typeof v === "object" && v.bytes === null) return el("span", "mono", v.path || "null");
      const a = el("audio");
      a.controls = true;
      a.preload = "none";
      a.src = cellURL(row, c.name);
      a.addEventListener("error", () => a.replaceWith(el("span", "null", "null or not playable")));
      a.addEventListener("click", (ev) => ev.stopPropagation());
      return a;
    }
    case "media": {
      const a = el("a", null, "open");
      a.href = cellURL(row, c.name);
      a.target = "_blank";
      a.rel = "noopener";
      a.addEventListener("click", (ev) => ev.stopPropagation());
      return a;
    }
    case "string": {
      const s = String(v);
      if (full || s.length <= SHORT) return el("span", "txt", s);
      return collapsible(s, s.slice(0, SHORT) + "…", "txt");
    }
    case "binary": {
      const n = Math.floor(String(v).length * 3 / 4);
      return el("span", "mono", full ? String(v) : "≈" + fmtBytes(n) + " (base64)");
    }
    case "list": {
      if (!Array.isArray(v)) break;
      const text = JSON.stringify(v);
      if (full || (v.length <= LIST_SHOWN && text.length <= SHORT)) return el("span", "mono", text);
      const head = JSON.stringify(v.slice(0, LIST_SHOWN)).slice(0, SHORT);
      return collapsible(text, "[" + v.length + " items] " + head + "…", "mono");
    }
    default: break;
  }
  const text = typeof v === "object" ? JSON.stringify(v) : String(v);
  if (!full && text.length > SHORT) return collapsible(text, text.slice(0, SHORT) + "…", "mono");
  return el("span", typeof v === "object" ? "mono" : null, text);
}

function renderRows() {
  const tb = $("rows");
  tb.replaceChildren();
  state.rows.forEach((r, i) => {
    const rowNo = state.offset + i;
    const tr = el("tr");
    tr.dataset.row = rowNo;
    tr.tabIndex = -1;
    tr.append(el("td", "rn", rowNo));
    for (const c of state.cols) {
      const td = el("td", c.kind === "number" ? "num" : null);
      td.dataset.col = c.name;
      td.append(valueNode(c, r[c.name], rowNo, false));
      tr.append(td);
    }
    tr.addEventListener("click", () => { select(i); openDetail(i); });
    tb.append(tr);
  });
  const end = state.offset + state.rows.length;
  $("range").textContent = state.numRows === 0 ? "no rows" :
    "rows " + fmtInt(state.offset) + "–" + fmtInt(end - 1) + " of " + fmtInt(state.numRows);
  $("prev").disabled = state.offset === 0;
  $("next").disabled = end >= state.numRows;
  state.sel = -1;
}

async function load(offset) {
  const token = ++state.loadToken;
  const p = viewParams();
  p.set("offset", Math.max(0, offset));
  p.set("length", PAGE);
  /* Image/Audio bytes come one by one from /api/cell, not base64 in the page. */
  const light = state.cols.filter((c) => !PAYLOAD.includes(c.kind)).map((c) => c.name);
  if (light.length && light.length < state.cols.length) p.set("columns", light.join(","));
  setStatus("loading", true);
  const t0 = performance.now();
  try {
    const body = await getJSON("/api/rows?" + p.toString());
    if (token !== state.loadToken) return;
    state.offset = body.offset;
    state.numRows = body.num_rows;
    state.rows = body.rows;
    $("filter-error").hidden = true;
    $("filter").removeAttribute("aria-invalid");
    renderRows();
    /* the first rows on screen, for bench/bench_serve.py --browser */
    if (!performance.getEntriesByName("quiver-first-rows").length) performance.mark("quiver-first-rows");
    setStatus(Math.round(performance.now() - t0) + " ms");
  } catch (e) {
    if (token !== state.loadToken) return;
    setStatus("");
    showError(e.message);
  }
}

function showError(msg) {
  const pre = $("filter-error");
  pre.textContent = msg;
  pre.hidden = false;
  if (/^where:/.test(msg)) $("filter").setAttribute("aria-invalid", "true");
}

function select(i) {
  const trs = $("rows").children;
  if (!trs.length) return;
  i = Math.max(0, Math.min(trs.length - 1, i));
  if (state.sel >= 0 && trs[state.sel]) trs[state.sel].classList.remove("sel");
  state.sel = i;
  trs[i].classList.add("sel");
  trs[i].focus({ preventScroll: true });
  trs[i].scrollIntoView({ block: "nearest" });
}

/* --------------------------------------------------------------- detail */

function openDetail(i) {
  const r = state.rows[i];
  if (!r) return;
  const rowNo = state.offset + i;
  $("detail-title").textContent = "Row " + fmtInt(rowNo) + (state.where || state.sort || state.seed !== "" ? " of this view" : "");
  const body = $("detail-body");
  body.replaceChildren();
  for (const c of state.cols) {
    const f = el("div", "field");
    const h = el("div");
    h.append(el("span", "fname", c.name), el("span", "ftype", headType(c)));
    f.append(h);
    const v = r[c.name];
    if (v !== null && PAYLOAD.includes(c.kind)) f.append(valueNode(c, v, rowNo, true));
    else if (v !== null && typeof v === "object") f.append(el("pre", null, JSON.stringify(v, null, 2)));
    else { const pre = el("pre"); pre.append(valueNode(c, v, rowNo, true)); f.append(pre); }
    body.append(f);
  }
  $("detail").hidden = false;
  $("detail-close").focus();
}

function closeDetail() {
  $("detail").hidden = true;
  const trs = $("rows").children;
  if (state.sel >= 0 && trs[state.sel]) trs[state.sel].focus({ preventScroll: true });
}

/* ---------------------------------------------------------------- stats */

function closeStats() {
  if (state.stats) state.stats.abort();
  state.stats = null;
  $("stats-panel").hidden = true;
}

async function startStats(column) {
  if (state.stats) state.stats.abort();
  const ctl = new AbortController();
  state.stats = ctl;
  $("stats-panel").hidden = false;
  $("stats-title").textContent = "Stats: " + column;
  $("stats-body").replaceChildren();
  $("stats-bar").style.width = "0%";
  $("stats-state").textContent = "computing…";
  $("stats-cancel").disabled = false;
  $("stats-panel").scrollIntoView({ block: "nearest" });
  const p = viewParams();
  p.delete("sort"); p.delete("seed");
  p.set("column", column);
  try {
    const r = await fetch("/api/stats?" + p.toString(), { signal: ctl.signal });
    if (!r.ok) { const b = parseJSON(await r.text()); throw new Error(b.error || r.statusText); }
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.trim()) continue;
        const m = parseJSON(line);
        if (m.error) throw new Error(m.error);
        if (m.progress !== undefined) {
          const pct = m.total ? (100 * m.progress / m.total) : 100;
          $("stats-bar").style.width = pct.toFixed(1) + "%";
          $("stats-state").textContent = fmtInt(m.progress) + " / " + fmtInt(m.total);
        }
        if (m.done) {
          $("stats-bar").style.width = "100%";
          $("stats-state").textContent = "done";
          renderStats(m.stats);
          $("stats-panel").scrollIntoView({ block: "nearest" });
        }
      }
    }
  } catch (e) {
    $("stats-state").textContent = e.name === "AbortError" ? "cancelled" : "error: " + e.message;
  }
  $("stats-cancel").disabled = true;
  if (state.stats === ctl) state.stats = null;
}

function fmtNum(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "number" && !Number.isInteger(v)) return Number(v.toPrecision(6)).toString();
  return typeof v === "number" ? fmtInt(v) : String(v);
}

const SVGNS = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}

function histogram(h) {
  const W = 270, H = 90, n = h.counts.length, max = Math.max(1, ...h.counts);
  const s = svg("svg", { viewBox: "0 0 " + W + " " + (H + 14), class: "chart", role: "img",
    "aria-label": "histogram of " + h.of });
  const bw = W / n;
  h.counts.forEach((c, i) => {
    const bh = c ? Math.max(1, H * c / max) : 0;
    const r = svg("rect", { x: (i * bw + 0.5).toFixed(1), y: (H - bh).toFixed(1), width: Math.max(1, bw - 1).toFixed(1), height: bh.toFixed(1), class: "b" });
    const t = svg("title", {});
    t.textContent = "[" + fmtNum(h.edges[i]) + ", " + fmtNum(h.edges[i + 1]) + "): " + fmtInt(c);
    r.append(t);
    s.append(r);
  });
  const lo = svg("text", { x: 0, y: H + 11 }); lo.textContent = fmtNum(h.edges[0]);
  const hi = svg("text", { x: W, y: H + 11, "text-anchor": "end" }); hi.textContent = fmtNum(h.edges[n]);
  s.append(lo, hi);
  return s;
}

function renderStats(st) {
  const body = $("stats-body");
  body.replaceChildren();
  const dl = el("dl", "kv");
  const add = (k, v) => { dl.append(el("dt", null, k), el("dd", null, fmtNum(v))); };
  add("rows", st.count);
  add("nulls", st.nulls);
  if (st.nan) add("NaN", st.nan);
  for (const k of ["min", "max", "mean", "min_length", "max_length", "mean_length"]) if (k in st) add(k.replace("_", " "), st[k]);
  if ("distinct_estimate" in st) add("distinct ≈", st.distinct_estimate);
  if ("distinct" in st) add("distinct", st.distinct);
  body.append(dl);
  if (st.histogram) {
    body.append(el("div", "col-type", "histogram of " + st.histogram.of));
    body.append(histogram(st.histogram));
  }
  if (st.top && st.top.length) {
    body.append(el("div", "col-type", "top values" + (st.top_approximate ? " (approximate: at least)" : "")));
    const ul = el("ul", "topv");
    const max = Math.max(1, ...st.top.map((t) => t.count_max || t.count));
    for (const t of st.top) {
      const li = el("li");
      const fill = el("span", "fill");
      fill.style.width = (100 * (t.count_max || t.count) / max).toFixed(1) + "%";
      const label = t.label !== undefined ? t.label + " (" + t.value + ")" : String(t.value) + (t.truncated ? "…" : "");
      const v = el("span", "v", label);
      v.title = label;
      li.append(fill, v, el("span", "n", fmtInt(t.count)));
      ul.append(li);
    }
    body.append(ul);
  }
}

/* ---------------------------------------------------------------- wiring */

function applyFilter() {
  state.where = $("filter").value.trim();
  load(0);
}

function jump() {
  const v = $("jump").value.trim();
  if (!/^\d+$/.test(v)) { showError("row must be a non-negative integer"); return; }
  const row = Number(v);
  if (row >= state.numRows) { showError("row " + row + " is past the " + state.numRows + " rows"); return; }
  const off = Math.floor(row / PAGE) * PAGE;
  const after = () => select(row - state.offset);
  if (off === state.offset) after(); else load(off).then(after);
}

function onKey(ev) {
  const t = ev.target;
  const typing = t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA");
  if (ev.key === "Escape") {
    if (!$("detail").hidden) { closeDetail(); ev.preventDefault(); return; }
    if (typing) { t.blur(); return; }
  }
  if (!$("detail").hidden) return;
  if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  switch (ev.key) {
    case "j": case "ArrowDown": select(state.sel + 1); break;
    case "k": case "ArrowUp": select(state.sel - 1); break;
    case "Enter": if (state.sel >= 0) openDetail(state.sel); else return; break;
    case "n": case "PageDown": if (!$("next").disabled) load(state.offset + PAGE); break;
    case "p": case "PageUp": if (!$("prev").disabled) load(state.offset - PAGE); break;
    case "/": $("filter").focus(); break;
    case "g": $("jump").focus(); break;
    default: return;
  }
  ev.preventDefault();
}

function setSchemaHidden(hidden) {
  document.querySelector("main").classList.toggle("schema-hidden", hidden);
  $("schema-toggle").textContent = hidden ? "show" : "hide";
  $("schema-toggle").setAttribute("aria-expanded", String(!hidden));
}

async function init() {
  $("controls").addEventListener("submit", (ev) => { ev.preventDefault(); applyFilter(); });
  $("prev").addEventListener("click", () => load(state.offset - PAGE));
  $("next").addEventListener("click", () => load(state.offset + PAGE));
  $("jump-go").addEventListener("click", jump);
  $("jump").addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); jump(); } });
  $("sort-col").addEventListener("change", () => {
    state.sort = $("sort-col").value; state.seed = ""; $("seed").value = ""; renderHead(); load(0);
  });
  $("sort-dir").addEventListener("change", () => { state.desc = $("sort-dir").value === "desc"; renderHead(); if (state.sort) load(0); });
  $("shuffle").addEventListener("click", () => {
    let s = $("seed").value.trim();
    if (s === "") { s = String(Math.floor(Math.random() * 1e9)); $("seed").value = s; }
    if (!/^\d+$/.test(s)) { showError("seed must be a non-negative integer"); return; }
    state.seed = s; state.sort = ""; $("sort-col").value = ""; renderHead(); load(0);
  });
  $("reset").addEventListener("click", () => chooseSplit(state.split));
  $("split").addEventListener("change", () => chooseSplit($("split").value));
  $("detail-close").addEventListener("click", closeDetail);
  $("detail").addEventListener("click", (ev) => { if (ev.target === $("detail")) closeDetail(); });
  $("stats-cancel").addEventListener("click", () => { if (state.stats) state.stats.abort(); });
  $("stats-close").addEventListener("click", closeStats);
  $("schema-toggle").addEventListener("click", () =>
    setSchemaHidden(!document.querySelector("main").classList.contains("schema-hidden")));
  /* phones: the rows first, the schema one tap away */
  const phone = window.matchMedia("(max-width: 760px)");
  phone.addEventListener("change", (e) => setSchemaHidden(e.matches));
  document.addEventListener("keydown", onKey);
  if (phone.matches) setSchemaHidden(true);
  try {
    state.info = await getJSON("/api/info");
  } catch (e) {
    showError("cannot read /api/info: " + e.message);
    return;
  }
  $("path").textContent = state.info.path;
  document.title = "quiver · " + state.info.path;
  const sel = $("split");
  for (const s of state.info.splits) sel.append(new Option(s.name + " (" + fmtInt(s.num_rows) + ")", s.name));
  sel.disabled = state.info.splits.length < 2;
  chooseSplit(state.info.splits[0].name);
}

document.addEventListener("DOMContentLoaded", init);
