// dhp dashboard: the page. Reads pages of handoffs and one handoff's
// detail from /api, and applies the deltas /api/events pushes (no reload).
// Every value from the store is written with textContent, never as HTML.
"use strict";
(function () {
  const STATUSES = ["pending", "running", "suspended", "orphaned", "completed", "failed"];
  const LIMIT = 50;
  // Deltas kept to replay on a page read before them but answered after.
  const RECENT = 64;
  // seq: the newest poll the rows and counts shown reflect (a page's or a delta's).
  const state = { status: "", q: "", pageStarts: [""], next: null, rows: new Map(), selected: null, summary: null,
    seq: 0, recent: [], loads: 0, streamed: false };
  const $ = (id) => document.getElementById(id);
  const el = (tag, text, attrs) => {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  };
  const short = (h) => (h ? h.slice(0, 12) : "–");
  const fmtTime = (t) => (typeof t === "number" && t > 0 ? new Date(t * 1000).toISOString().slice(11, 19) : "–");
  const leaseLeft = (r) => {
    if (r.lease_expires_at == null || r.holder === "__orphaned__" || r.lease_expires_at <= 0) return "–";
    const s = r.lease_expires_at - Date.now() / 1000;
    return s > 1e8 ? "∞" : (s >= 0 ? s.toFixed(0) + " s" : "expired");
  };
  const reason = (r) => (r.status === "failed" ? r.error : r.status === "orphaned" ? r.orphan_reason : null) || "";
  const matches = (r) => {
    if (state.status && r.status !== state.status) return false;
    const q = state.q;
    if (!q) return true;
    if (/^[0-9a-fA-F]{1,64}$/.test(q)) return r.hid.startsWith(q.toLowerCase());
    return r.holder === q;
  };

  async function api(path) {
    const res = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (res.status === 401) { location.href = "/login"; throw new Error("unauthorized"); }
    const body = await res.json();
    if (!res.ok) throw new Error(body.error || res.statusText);
    return body;
  }

  function rowCells(tr, r) {
    tr.replaceChildren();
    tr.dataset.hid = r.hid;
    tr.dataset.status = r.status || "unreadable";
    tr.append(el("td", short(r.hid), { class: "hid", title: r.hid }));
    tr.append(el("td", r.status || "unreadable", { class: "status", "data-status": r.status || "" }));
    tr.append(el("td", r.kind ?? "", { class: "kind" }));
    tr.append(el("td", r.attempt ?? "", { class: "attempt" }));
    tr.append(el("td", r.holder ?? "–", { class: "holder" }));
    tr.append(el("td", r.fence ?? "–", { class: "fence" }));
    tr.append(el("td", leaseLeft(r), { class: "lease" }));
    tr.append(el("td", r.checkpoints, { class: "ckpts" }));
    tr.append(el("td", reason(r), { class: "reason", title: reason(r) }));
    tr.append(el("td", fmtTime(r.updated_at), { class: "updated" }));
    if (r.hid === state.selected) tr.classList.add("sel");
  }

  function render() {
    const body = $("handoffs").tBodies[0];
    const sorted = [...state.rows.values()].sort((a, b) => (a.hid < b.hid ? -1 : 1));
    body.replaceChildren(...sorted.map((r) => { const tr = el("tr"); rowCells(tr, r); return tr; }));
    $("pageinfo").textContent = `page ${state.pageStarts.length}, ${sorted.length} shown` + (state.next ? "" : " (last page)");
    $("next").disabled = !state.next;
  }

  // The rows and the counts come from one catch-up of the server's poller
  // (the page's `summary` and the `changed` rows read with it): the page
  // never shows a count older than its rows ("running 0" beside a running row).
  async function loadPage(retry) {
    const load = ++state.loads;
    const after = state.pageStarts[state.pageStarts.length - 1];
    const p = new URLSearchParams({ limit: String(LIMIT) });
    if (state.status) p.set("status", state.status);
    if (state.q) p.set("q", state.q);
    if (after) p.set("after", after);
    const page = await api("/api/handoffs?" + p);
    if (load !== state.loads) return; // a newer load was asked for
    state.rows = new Map(page.rows.map((r) => [r.hid, r]));
    state.next = page.next_after;
    const s = page.summary;
    applyRows(page.changed || []);
    if (s.seq >= state.seq) {
      state.seq = s.seq;
      state.summary = s;
      renderMeta();
    } else {
      // deltas after the page's catch-up arrived first: replay them on it
      const later = state.recent.filter((d) => d.seq > s.seq);
      if (later.length !== state.seq - s.seq || later.some((d) => d.truncated)) { loadPage(); return; }
      for (const d of later) applyRows(d.rows);
    }
    if (page.truncated && !retry) { loadPage(true); return; }
    render();
    document.body.dataset.loaded = String(Number(document.body.dataset.loaded || 0) + 1);
    if (!document.body.dataset.firstRowsMs) document.body.dataset.firstRowsMs = String(performance.now());
  }

  function renderStatuses() {
    const nav = $("statuses");
    const counts = (state.summary && state.summary.counts) || {};
    const total = (state.summary && state.summary.total) || 0;
    const btn = (value, label, n) => {
      const b = el("button", `${label} ${n}`, { type: "button", "data-filter": value });
      if (state.status === value) b.classList.add("on");
      b.addEventListener("click", () => setStatus(value));
      return b;
    };
    nav.replaceChildren(btn("", "all", total), ...STATUSES.map((s) => btn(s, s === "failed" ? "failed (DLQ)" : s, counts[s] || 0)));
  }

  function renderMeta() {
    const s = state.summary;
    if (!s) return;
    const l = s.leader;
    $("leader").textContent = l
      ? `leader: ${l.holder} (term expires in ${(l.expires_at - s.now).toFixed(1)} s; ${l.terms_seen} term(s) seen)`
      : "leader: none";
    const box = $("liveness");
    const items = (s.liveness || []).map((x) =>
      el("div", `${x.holder}: ${x.live ? "alive (pid " + x.pid + ")" : "dead (token not held)"}`, { class: x.live ? "alive" : "dead", "data-holder": x.holder }));
    if (!items.length) items.push(el("div", "no same-host liveness tokens"));
    if (s.error) items.push(el("div", "store error: " + s.error, { class: "dead" }));
    box.replaceChildren(...items);
    renderStatuses();
  }

  // Changed rows into the shown page; true if rows came or went.
  function applyRows(rows) {
    const body = $("handoffs").tBodies[0];
    const first = state.pageStarts[state.pageStarts.length - 1];
    let structural = false;
    for (const r of rows) {
      const had = state.rows.has(r.hid);
      const inRange = r.hid > first && (!state.next || r.hid <= state.next);
      if (had && !matches(r)) { state.rows.delete(r.hid); structural = true; }
      else if (had) {
        state.rows.set(r.hid, r);
        const tr = body.querySelector(`tr[data-hid="${r.hid}"]`);
        if (tr) { rowCells(tr, r); tr.classList.remove("flash"); void tr.offsetWidth; tr.classList.add("flash"); }
      } else if (matches(r) && inRange) { state.rows.set(r.hid, r); structural = true; }
    }
    return structural;
  }

  function applyDelta(d) {
    // a delta at or before the shown page's catch-up: its rows and counts are in it
    if (d.seq > state.seq) {
      state.seq = d.seq;
      state.recent.push({ seq: d.seq, rows: d.rows || [], truncated: d.truncated });
      if (state.recent.length > RECENT) state.recent.shift();
      state.summary = d;
      renderMeta();
      if (d.truncated) loadPage();
      else if (applyRows(d.rows || [])) render();
    }
    for (const r of d.rows || []) if (r.hid === state.selected) showDetail(r.hid);
    if (d.approvals_changed && state.selected) showDetail(state.selected);
    document.body.dataset.seq = String(d.seq);
  }

  async function showDetail(hid) {
    state.selected = hid;
    for (const tr of $("handoffs").tBodies[0].rows) tr.classList.toggle("sel", tr.dataset.hid === hid);
    let d;
    try { d = await api("/api/handoff/" + hid); } catch (e) { return; }
    if (state.selected !== hid) return;
    const r = d.row;
    $("detail").hidden = false;
    $("detail-hid").textContent = hid;
    $("detail-status").textContent = r.status || "unreadable";
    $("detail-status").dataset.status = r.status || "";
    $("detail-holder").textContent = r.holder ?? "–";
    $("detail-fence").textContent = r.fence ?? "–";
    $("detail-attempt").textContent = r.attempt ?? "–";
    $("detail-lease").textContent = d.ownership
      ? `${leaseLeft(r)} (heartbeat ${d.ownership.heartbeat_interval_s} s × ${d.ownership.max_missed})` : "–";
    $("detail-ckpts").textContent = r.checkpoints;
    $("detail-reason").textContent = reason(r) || "–";
    const fill = (id, rows, cols) => $(id).tBodies[0].replaceChildren(...rows.map((x) => {
      const tr = el("tr"); for (const c of cols) tr.append(el("td", typeof c === "function" ? c(x) : x[c] ?? "")); return tr;
    }));
    fill("detail-owners", d.owners_seen || [], [(x) => fmtTime(x.seen_at), "status", (x) => x.holder ?? "–", (x) => x.fence ?? "–", "attempt"]);
    fill("detail-checkpoints", d.checkpoints.slice(-20).reverse(), ["seq", "at", "state_bytes", "state_head"]);
    fill("detail-effects", d.effects, ["step_id", (x) => fmtTime(x.at), "result_head"]);
    fill("detail-approvals", d.approvals, ["approval_id", "action_class", "status", (x) => fmtTime(x.created_at), (x) => fmtTime(x.decided_at)]);
    $("detail-envelope").textContent = JSON.stringify(d.envelope, null, 2);
    chart(d.checkpoints);
    document.body.dataset.detailLoads = String(Number(document.body.dataset.detailLoads || 0) + 1);
  }

  function chart(cps) {
    const svg = $("detail-ckpt-chart");
    const ns = "http://www.w3.org/2000/svg";
    svg.replaceChildren();
    const ts = cps.map((c) => Date.parse(c.at)).filter((t) => !isNaN(t));
    if (ts.length < 1) return;
    const lo = ts[0], hi = Math.max(ts[ts.length - 1], lo + 1);
    const pts = ts.map((t, i) => `${(5 + (350 * (t - lo)) / (hi - lo)).toFixed(1)},${(55 - (50 * (i + 1)) / ts.length).toFixed(1)}`);
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("points", pts.join(" "));
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", "#1d3557");
    svg.append(line);
  }

  function setStatus(s) {
    state.status = s;
    state.pageStarts = [""];
    renderStatuses();
    loadPage();
  }

  function connect() {
    const es = new EventSource("/api/events");
    es.addEventListener("summary", (e) => {
      const s = JSON.parse(e.data);
      // a reconnect may reach a restarted server, whose seq starts again;
      // the first stream may start before the first page's catch-up
      if (state.streamed || s.seq >= state.seq) { state.summary = s; state.seq = s.seq; state.recent = []; renderMeta(); }
      state.streamed = true;
      $("conn").dataset.state = "live"; $("conn").textContent = "live"; });
    es.addEventListener("delta", (e) => applyDelta(JSON.parse(e.data)));
    es.addEventListener("resync", () => { loadPage(); if (state.selected) showDetail(state.selected); });
    es.onerror = () => { $("conn").dataset.state = "down"; $("conn").textContent = "reconnecting…"; };
    es.onopen = () => { $("conn").dataset.state = "live"; $("conn").textContent = "live"; loadPage(); };
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("handoffs").tBodies[0].addEventListener("click", (e) => {
      const tr = e.target.closest("tr");
      if (tr && tr.dataset.hid) showDetail(tr.dataset.hid);
    });
    let t = null;
    $("search").addEventListener("input", () => {
      clearTimeout(t);
      t = setTimeout(() => { state.q = $("search").value.trim(); state.pageStarts = [""]; loadPage(); }, 250);
    });
    $("first").addEventListener("click", () => { state.pageStarts = [""]; loadPage(); });
    $("next").addEventListener("click", () => { if (state.next) { state.pageStarts.push(state.next); loadPage(); } });
    renderStatuses();
    loadPage();
    connect();
    setInterval(() => { for (const tr of $("handoffs").tBodies[0].rows) { const r = state.rows.get(tr.dataset.hid); if (r) tr.querySelector(".lease").textContent = leaseLeft(r); } }, 1000);
  });
  // for tests and the curious: the page's state
  window.dhpDashboard = { state, setStatus, showDetail, loadPage };
})();
