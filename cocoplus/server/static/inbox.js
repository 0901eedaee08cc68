// The decision page (/inbox, /inbox/d/<id>): every open decision of your projects, one decision in full, the
// workers, delivery failures and the panic button. It reads and writes /api/v1/inbox with a paired device's
// cookie (HttpOnly: this script never sees it) or the server's token (`#token=` or pasted, as on the main page).
// Every answer is the operator's, through channel `page`. A key or a tap tells the server you are at a screen.
"use strict";

const API = "/api/v1";
const TOKEN_KEY = "cocoplus-token";
const POLL_MS = 4000;
const PRESENCE_EVERY_MS = 10000;
const $ = (id) => document.getElementById(id);
const LABELS = { approve: "Approve", deny: "Deny", resume: "Resume", later: "Resume at the reset", leave: "Leave it" };
const ident = (() => { const m = /^\/inbox\/d\/([^/]+)$/.exec(location.pathname); return m ? decodeURIComponent(m[1]) : null; })();
let viewer = null;

function takeTokenFromFragment() {
  const m = /(?:^|[#&])token=([^&]+)/.exec(location.hash || "");
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
}

class ApiError extends Error {
  constructor(status, message, data) { super(message); this.status = status; this.data = data; }
}
async function call(method, path, body) {
  const headers = { "Accept": "application/json" };
  const t = sessionStorage.getItem(TOKEN_KEY);
  if (t) headers["Authorization"] = "Bearer " + t;
  const opts = { method, headers, cache: "no-store", credentials: "same-origin" };
  if (body !== undefined) { headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  let resp;
  try { resp = await fetch(API + path, opts); } catch (e) { throw new ApiError(0, "the server cannot be reached"); }
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (!resp.ok) {
    if (resp.status === 401) { sessionStorage.removeItem(TOKEN_KEY); $("unpaired").hidden = false; }
    throw new ApiError(resp.status, (data && (data.error || data.message)) || ("HTTP " + resp.status), data);
  }
  $("unpaired").hidden = true;
  return data;
}

function show(node, value) { node.textContent = inert(value); }
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) node.append(typeof c === "string" ? inert(c) : c);
  return node;
}
function notice(text) { show($("notice-text"), text); $("notice").hidden = false; $("error").hidden = true; }
function showError(e) { show($("error-text"), e instanceof Error ? e.message : String(e)); $("error").hidden = false; $("notice").hidden = true; }
async function act(fn) {
  try { const out = await fn(); return out; } catch (e) { showError(e); return null; } finally { refresh(); }
}
function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : d.toLocaleString([], { hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
}

// -- answers -----------------------------------------------------------------------------------------------------
async function decide(id, action, extra) {
  const out = await act(() => call("POST", `/inbox/decisions/${encodeURIComponent(id)}`, { action, ...(extra || {}) }));
  if (out) notice(out.message || `${id}: ${action}`);
}
function answerButtons(d, withAlways) {
  const out = [];
  for (const a of d.actions) {
    if (a === "answer") continue;  // the text box answers
    out.push(el("button", { type: "button", class: a, "data-action": a, onclick: () => decide(d.id, a) }, LABELS[a] || a));
    if (a === "approve" && withAlways) {
      out.push(el("button", { type: "button", class: "approve", "data-action": "approve-always",
        title: "approve, and remember the rule for this project", onclick: () => decide(d.id, "approve", { always: true }) },
        "Approve always"));
    }
  }
  return out;
}

// -- the list ----------------------------------------------------------------------------------------------------
function decisionItem(d) {
  return el("li", { "data-id": d.id },
    el("div", {},
      el("a", { class: "summary", href: `/inbox/d/${encodeURIComponent(d.id)}` }, d.summary),
      el("div", { class: "meta" }, `${d.project_name || ""} · ${d.kind}` +
        (d.deadline ? ` · ${d.default} at ${when(d.deadline)} unless you answer` : ""))),
    el("div", { class: "buttons" }, ...answerButtons(d, false)));
}
function workerItem(w) {
  const ended = w.ended_text ? ` · ${w.ended_text}` : "";
  const live = ["running", "queued", "starting"].includes(w.state);
  return el("li", { "data-worker": w.id },
    el("div", {},
      el("div", {}, el("strong", {}, w.id), ` ${w.state_text} · ${w.runtime_text}`),
      el("div", { class: "meta" }, `${w.project} · ${w.session_alias || w.session || "-"}${ended}` + (w.task ? ` · ${w.task}` : ""))),
    live ? el("div", { class: "buttons" }, el("button", { type: "button", class: "danger", "data-stop": w.id,
      onclick: () => act(async () => notice((await call("POST", "/inbox/workers/stop", { project: w.state_dir, worker: w.id })).message || `${w.id} stopped`)) },
      "Stop")) : "");
}
function armed(button, text, fn) {
  // Two taps: the first arms the button for a few seconds, the second acts.
  if (button.dataset.armed) { delete button.dataset.armed; button.classList.remove("armed"); return fn(); }
  button.dataset.armed = "1";
  button.classList.add("armed");
  show(button, text);
  setTimeout(() => { if (button.dataset.armed) { delete button.dataset.armed; button.classList.remove("armed"); show(button, button.dataset.label); } }, 5000);
  return null;
}
function projectItem(p) {
  const b = el("button", { type: "button", class: "danger", "data-panic": p.name, "data-label": "Stop everything" }, "Stop everything");
  b.addEventListener("click", () => armed(b, `Tap again to stop ${p.name}`, () => act(async () => {
    const out = await call("POST", "/inbox/panic", { project: p.state_dir });
    notice(out.message || `${p.name} stopped`);
  })));
  return el("li", {}, el("div", {}, el("strong", {}, p.name), el("div", { class: "meta" }, p.stopped ? "stopped" : "running")),
    p.stopped ? "" : el("div", { class: "buttons" }, b));
}
function renderView(v) {
  viewer = v.viewer;
  const open = v.decisions || [];
  for (const d of open) d.project_name = String(d.project || "").replace(/\/+$/, "").split("/").pop();
  show($("count"), open.length ? `${open.length} waiting` : "");
  $("decisions").replaceChildren(...open.map(decisionItem));
  show($("decisions-note"), open.length ? "" : "Nothing waits for you.");
  const svc = v.service || {};
  show($("service"), svc.running ? "delivery on" : "delivery off");
  $("service").className = "pill " + (svc.running ? "on" : "off");
  show($("service-note"), svc.running ? `cocoplus inbox run is running (pid ${svc.pid}).` : (svc.note || ""));
  $("failures").replaceChildren(...(v.failures || []).map((f) => el("li", { class: "failed" },
    `${when(f.at || f.ts)} ${f.channel || ""} ${f.event}: ${f.why || f.error || ""} (${f.decision || ""}${f.project ? ", " + f.project : ""})`)));
  $("problems").replaceChildren(...(v.problems || []).map((p) => el("li", {}, p)));
  const workers = v.workers || [];
  $("workers").replaceChildren(...workers.map(workerItem));
  show($("workers-note"), workers.length ? "" : "No workers.");
  $("projects").replaceChildren(...(v.projects || []).map(projectItem));
}

// -- one decision --------------------------------------------------------------------------------------------------
function renderDecision(r) {
  const d = r.decision;
  $("decision").hidden = false;
  show($("d-where"), `${r.project} · ${d.kind}${d.runtime ? " · " + d.runtime : ""}`);
  show($("d-id"), d.id);
  show($("d-state"), d.state);
  show($("d-summary"), d.summary);
  $("d-detail").hidden = !d.detail;
  if (d.detail && $("d-detail").textContent !== inert(d.detail)) show($("d-detail"), d.detail);
  show($("d-deadline"), d.deadline && d.state === "open" ? `Unless you answer: ${d.default} at ${when(d.deadline)}` : "");
  const open = d.state === "open";
  $("d-resolved").hidden = open;
  if (!open) show($("d-resolved"), `${d.state}` + (d.resolved_by ? ` by ${d.resolved_by}` : "") + (d.channel ? ` via ${d.channel}` : "") + (d.resolved_at ? ` at ${when(d.resolved_at)}` : ""));
  $("d-actions").replaceChildren(...(open ? answerButtons(d, r.always) : []));
  $("d-answer").hidden = !(open && d.actions.includes("answer"));
  $("d-steer").hidden = !r.steer;
  $("d-stop").hidden = !r.stop;
  if (r.stop) $("d-stop").dataset.label = r.stop.worker ? `Stop worker ${r.stop.worker}` : "Stop this session";
  if (r.stop && !$("d-stop").dataset.armed) show($("d-stop"), $("d-stop").dataset.label);
}

async function refresh() {
  try {
    renderView(await call("GET", "/inbox"));
    if (ident) renderDecision(await call("GET", `/inbox/decisions/${encodeURIComponent(ident)}`));
  } catch (e) {
    if (e.status !== 401) showError(e);
  }
}

let lastPresence = 0;
function presence() {
  const now = Date.now();
  if (now - lastPresence < PRESENCE_EVERY_MS) return;
  lastPresence = now;
  call("POST", "/inbox/presence").catch(() => {});
}

function wire() {
  $("error-close").addEventListener("click", () => { $("error").hidden = true; });
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const t = $("token-input").value.trim();
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    $("token-input").value = "";
    refresh();
  });
  $("d-answer-btn").addEventListener("click", () => {
    const text = $("d-answer-text").value;
    if (!text.trim()) { showError("write the answer first"); return; }
    decide(ident, "answer", { text }).then(() => { $("d-answer-text").value = ""; });
  });
  $("d-steer-btn").addEventListener("click", () => act(async () => {
    const out = await call("POST", `/inbox/decisions/${encodeURIComponent(ident)}/steer`, { text: $("d-steer-text").value });
    $("d-steer-text").value = "";
    notice(out.message || "steered: at its next turn");
  }));
  $("d-stop").addEventListener("click", () => armed($("d-stop"), "Tap again to stop it", () => act(async () => {
    const out = await call("POST", `/inbox/decisions/${encodeURIComponent(ident)}/stop`);
    notice(out.message || "stopped");
  })));
  for (const kind of ["keydown", "pointerdown"]) document.addEventListener(kind, presence, { passive: true });
}

takeTokenFromFragment();
document.addEventListener("DOMContentLoaded", () => {
  wire();
  refresh();
  setInterval(refresh, POLL_MS);
});
