// The cocoplus page: reads the REST API, writes with the server's token, and
// re-reads whatever /api/v1/events says changed. No build step; the one library is uPlot
// (uplot.min.js, shipped beside this file) for the charts.
//
// The token reaches the page in the URL fragment (`/#token=...`, printed by
// `cocoplus serve`); fragments are never sent to a server. The page keeps it
// in sessionStorage for this tab and removes it from the address bar.
"use strict";

const CONV = "master-agent";
const API = "/api/v1";
const TOKEN_KEY = "cocoplus-token";
const MESSAGES_SHOWN = 300;
const $ = (id) => document.getElementById(id);
const state = { autonomous: null, sessions: null, conversation: null, busySwitch: false, showEnded: false };
// Allowed values and bounds, from GET /api/v1/meta (the server defines them once; the page never lists them).
const meta = { enums: {}, settings: {} };

// -- token --------------------------------------------------------------------------
function takeTokenFromFragment() {
  const m = /(?:^|[#&])token=([^&]+)/.exec(location.hash || "");
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
}
function token() { return sessionStorage.getItem(TOKEN_KEY); }
function showTokenBanner() { $("token-banner").hidden = !!token(); }

// -- HTTP ---------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}
// `auth`: the read needs the token (the fleet view); the token is sent whenever the page has it.
async function call(method, path, body, auth) {
  const headers = { "Accept": "application/json" };
  const opts = { method, headers, cache: "no-store", credentials: "omit" };
  // The token goes with reads too: a server with --public answers no read without it (server/security.py).
  const t = token();
  if (t) headers["Authorization"] = "Bearer " + t;
  if (method !== "GET") {
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
  }
  let resp;
  try {
    resp = await fetch(API + path, opts);
  } catch (e) {
    throw new ApiError(0, "the server cannot be reached (is `cocoplus serve` still running?)");
  }
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (!resp.ok) {
    const msg = ((data && data.error) || ("HTTP " + resp.status)) + (data && data.hint ? ` (${data.hint})` : "");
    if (resp.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      showTokenBanner();
    }
    throw new ApiError(resp.status, msg);
  }
  return data;
}
function showError(e) {
  show($("error-text"), e instanceof Error ? e.message : String(e));
  $("error").hidden = false;
}
async function act(fn) {
  try { return await fn(); } catch (e) { showError(e); return null; }
}

// -- helpers ------------------------------------------------------------------------
// `inert(value)`: untrusted text made inert (inert.js, loaded before this file).
function show(node, value) { node.textContent = inert(value); }
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k in node && typeof v !== "string") node[k] = v;
    else node.setAttribute(k, v === true ? "" : (k === "title" || k.startsWith("aria-") ? inert(v) : v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(inert(String(c))));
  }
  return node;
}
function timeOf(ts) { return ts ? String(ts).slice(11, 19) : ""; }

// -- vocabulary ---------------------------------------------------------------------------
async function loadMeta() {
  const data = await call("GET", "/meta");
  meta.enums = data.enums || {};
  meta.settings = data.settings || {};
  const turns = meta.settings["supervision.max_turns"];
  const box = $("max-turns");
  if (turns) {
    box.min = turns.minimum;
    box.max = turns.maximum;
    if (!box.dataset.edited) box.value = turns.value;
  }
}
function isActive(s) {
  const active = meta.enums.active_states;
  return !active || active.includes(s.state);
}
function turnsDefault() {
  const turns = meta.settings["supervision.max_turns"];
  return turns ? turns.value : "";
}

// -- supervision ------------------------------------------------------------------------
async function loadAutonomous() {
  const data = await call("GET", "/session-os/main-brain/autonomous");
  state.autonomous = data;
  renderAutonomous();
}
function renderAutonomous() {
  const data = state.autonomous || {};
  const a = data.autonomous;
  const on = !!(a && a.enabled);
  if (!state.busySwitch) $("sup-switch").checked = on;
  show($("turns"), a ? `${a.turns_used} / ${a.max_turns}` : "– (never enabled)");
  if (a && document.activeElement !== $("task-hint") && !$("task-hint").dataset.edited) $("task-hint").value = a.task_hint || "";
  if (a && document.activeElement !== $("max-turns") && !$("max-turns").dataset.edited) $("max-turns").value = a.max_turns || turnsDefault();
  const sup = data.supervisor || {};
  show($("watcher"), sup.running ? `watcher running (pid ${sup.pid})` : (on ? "watcher NOT running: no round runs (`cocoplus supervision watcher run`)" : "watcher not running"));
  let st = "supervision " + (on ? "on" : (a ? "off" : "never enabled"));
  if (a && !on && a.finish_reason) st += ` (${a.finish_reason}` + (a.finish_summary ? `: ${a.finish_summary})` : ")");
  show($("sup-state"), st);
  const scope = (a && a.scope) || data.scope;
  if (scope) renderScope(scope);
  renderRounds(data);
}
// The round in progress, the last round's outcome (a failure with its reason) and what the brain did, with how to undo it.
function renderRounds(data) {
  const cur = data.round_in_progress, last = data.last_round;
  const parts = [];
  if (cur) parts.push(`round ${cur.number} in progress since ${timeOf(cur.started_at)}`);
  if (last) parts.push(`last round: ${last.text} (${timeOf(last.finished_at)})`);
  show($("round"), parts.join("; ") || "no round yet");
  $("round").classList.toggle("failed", !!(last && last.outcome === "failed"));
  const shown = [cur, last].filter(Boolean).map((r) => r.number);
  const acts = [...((cur && cur.actions) || []), ...((last && last.actions) || []),
    ...(data.recent_actions || []).filter((x) => x.round === null || !shown.includes(x.round))];
  $("round-actions").replaceChildren(...acts.map((x) => el("li", { class: x.error ? "failed" : null },
    `${timeOf(x.ts)} ${x.text} (by ${x.actor || x.by || "?"}${x.round === null ? ", outside a round" : `, round ${x.round}`})`,
    x.undo ? el("span", {}, " · undo: ", el("code", {}, x.undo)) : null)));
}
async function toggleSupervision() {
  const sw = $("sup-switch");
  const want = sw.checked;
  state.busySwitch = true;
  sw.disabled = true;
  const body = want ? { enabled: true, start_supervisor: $("start-watcher").checked } : { enabled: false };
  if (want) {
    const hint = $("task-hint").value.trim();
    if (hint) body.task_hint = hint;
    const turns = parseInt($("max-turns").value, 10);
    if (!Number.isNaN(turns)) body.max_turns = turns;
  }
  const data = await act(() => call("POST", "/session-os/main-brain/autonomous", body));
  state.busySwitch = false;
  sw.disabled = false;
  delete $("task-hint").dataset.edited;
  delete $("max-turns").dataset.edited;
  if (data) { state.autonomous = data; }
  renderAutonomous();
  await act(loadSessions);
}

// -- sessions ---------------------------------------------------------------------------
// The sessions at work first; the ended ones (the API's active_states say which are at work) folded
// under "Ended: N sessions", so the page never says none exist when some do. Each row shows what the API gives:
// the attention of an ended session is the API's (an open question stays; nothing else does).
async function loadSessions() {
  let data;
  try {
    data = await call("GET", "/coding-sessions");
  } catch (e) {
    if (state.sessions === null) show($("sessions-note"), "The sessions could not be read: " + e.message);
    throw e;
  }
  state.sessions = data.sessions || [];
  for (const s of state.sessions) colourIndex(s.id);
  renderScope(data.scope);
  renderSessions();
  renderCollisions(data.collisions || []);
}
// Two live sessions that changed the same file (each in its own tree): one line each, until one of them ends.
function renderCollisions(found) {
  const list = $("collisions");
  list.replaceChildren(...found.map((c) => el("li", {}, "collision: " + c.message)));
  list.hidden = found.length === 0;
}
function renderScope(scope) {
  if (!scope) return;
  const ex = (scope.excluded || []).map((e) => e.alias || e.id).join(", ") || "none";
  let text = `scope: ${scope.mode}; excluded: ${ex}`;
  if (scope.only) text += `; only: ${scope.only.map((e) => e.alias || e.id).join(", ")}`;
  show($("scope"), text);
}
function visibleSessions() {
  return (state.sessions || []).filter((s) => state.showEnded || isActive(s));
}
function sessionRow(s) {
  const box = el("input", { type: "checkbox", class: "exclude", "aria-label": `exclude ${s.alias || s.id}` });
  box.checked = !!s.excluded;
  box.addEventListener("change", async () => {
    box.disabled = true;
    const r = await act(() => call("PATCH", `/coding-sessions/${encodeURIComponent(s.id)}/supervision`, { excluded: box.checked }));
    box.disabled = false;
    if (!r) box.checked = !box.checked;
    await act(loadSessions);
  });
  const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
  swatch.style.backgroundColor = colourOf(colourIndex(s.id));
  const clashes = s.collides || [];
  const cls = [s.excluded ? "excluded" : "", isActive(s) ? "" : "ended", clashes.length ? "collides" : ""].filter(Boolean).join(" ");
  const clash = clashes.length ? "collides: " + clashes.map((c) => `${c.path} (with ${c.with})`).join(", ") : null;
  return el("tr", { class: cls || null, title: clash, dataset: { id: s.id, alias: s.alias || "" } },
    el("td", { title: s.id }, swatch, s.alias || s.id),
    el("td", { title: s.failover || null }, s.failover || s.runtime || ""),
    el("td", { title: s.paused || null }, s.paused ? s.paused.split(";")[0] : (s.state || ""), resumeAtButton(s)),
    el("td", { class: s.attention ? "attn" : null }, s.attention || ""),
    el("td", {}, box));
}
// A session paused by its runtime's limit: `session resume-at` from the page (an interactive session is
// never resumed by itself; a worker's resume can be moved). The time as the CLI reads it.
function resumeAtButton(s) {
  const limit = s.limit;
  if (s.state !== "paused" || !limit || limit.cancelled) return null;
  const who = s.alias || s.id;
  const b = el("button", { type: "button", class: "resume-at", title: `resume ${who} at a time (cocoplus session resume-at)` }, "resume at\u2026");
  b.addEventListener("click", async () => {
    const at = prompt(`Resume ${who} at (HH:MM local, +30m, +2h, or an ISO time):`, "+30m");
    if (!at || !at.trim()) return;
    b.disabled = true;
    await act(() => call("POST", `/coding-sessions/${encodeURIComponent(s.id)}/resume-at`, { at: at.trim() }));
    b.disabled = false;
    await act(loadSessions);
  });
  return b;
}
function renderSessions() {
  const all = state.sessions;
  const note = $("sessions-note");
  if (all === null) return;  // not read yet: the note says so
  const active = all.filter(isActive), ended = all.filter((s) => !isActive(s));
  $("active-rows").replaceChildren(...active.map(sessionRow));
  $("ended-rows").replaceChildren(...(state.showEnded ? ended.map(sessionRow) : []));
  $("ended-head").hidden = ended.length === 0;
  $("ended-rows").hidden = !state.showEnded || ended.length === 0;
  const fold = $("show-ended");
  show(fold, `${state.showEnded ? "\u25be" : "\u25b8"} Ended: ${ended.length} session${ended.length === 1 ? "" : "s"}` + (state.showEnded ? "" : " (show)"));
  fold.setAttribute("aria-expanded", String(state.showEnded));
  $("sessions").hidden = all.length === 0;
  let text = "";
  if (!all.length) text = "No agent sessions recorded yet (the hooks record them).";
  else if (!active.length) text = "No session is at work now.";
  show(note, text);
  note.hidden = !text;
  $("invert").disabled = visibleSessions().length === 0;
}
function toggleEnded() {
  state.showEnded = !state.showEnded;
  renderSessions();
}
async function invertVisible() {
  const ids = visibleSessions().map((s) => s.id);
  if (!ids.length) return;
  await act(() => call("POST", "/coding-sessions/supervision-scope", { mode: "invert", session_ids: ids }));
  await act(loadSessions);
}
async function scopeAll() {
  await act(() => call("POST", "/coding-sessions/supervision-scope", { mode: "all", session_ids: [] }));
  await act(loadSessions);
}

// -- session (operator) ---------------------------------------------------------------------
async function loadSession() {
  const rep = await call("GET", "/session");
  show($("project"), rep.project || "");
  const st = rep.status || {};
  const k = rep.kill_switch || {};
  const pill = $("run-state");
  show(pill, k.present ? "STOPPED" : (st.state || "unknown"));
  pill.className = "pill" + (k.present ? " stopped" : (st.state === "running" ? " on" : ""));
  if (k.damaged) show($("kill-state"), `kill switch: damaged (${k.error})`);
  else if (k.present) show($("kill-state"), `kill switch ON: stopped by ${k.operator || "unknown"} at ${k.created_at || k.created_at_fallback || "?"}: ${k.reason || "no reason given"}`);
  else show($("kill-state"), "kill switch: off");
  $("stop-btn").disabled = !!k.present;
  $("resume-btn").disabled = !k.present;
  const ib = rep.iteration_budget || {};
  let budget = ib.damaged ? `iteration budget: damaged (${ib.error})` : (ib.exists ? `iteration budget: ${ib.consumed}/${ib.cap}` : "iteration budget: not started");
  const cb = rep.cost_budget || {};
  if (cb.exists && !cb.damaged) budget += ` · cost: ${cb.state}` + (cb.limit > 0 ? ` ($${Number(cb.spent).toFixed(2)} of $${Number(cb.limit).toFixed(2)})` : "");
  const cfg = rep.config || {};
  if (cfg.ok === false) budget = `cocoplus.toml INVALID: ${cfg.error}; ${cfg.hooks} · ` + budget;
  show($("budget"), budget);
  const s = rep.steer || {};
  show($("steer-state"), s.pending ? `pending steer: ${String(s.text || "").trim().slice(0, 300)}` : "pending steer: none" + (s.in_flight ? ` (${s.in_flight} being delivered)` : ""));
}
async function stopAgent() {
  const reason = $("stop-reason").value.trim();
  await act(() => call("POST", "/session/stop", reason ? { reason } : {}));
  await act(loadSession);
}
async function resumeAgent() {
  if (!confirm("Remove AGENT_STOP and let the agent use tools again?")) return;
  const r = await act(() => call("POST", "/session/resume", {}));
  if (r && r.iteration_budget_exhausted) showError("The iteration budget is used up: the next tool call stops the agent again (use `session resume --reset-budget`).");
  await act(loadSession);
}
async function sendSteer() {
  const text = $("steer-text").value;
  if (!text.trim()) return;
  const r = await act(() => call("POST", "/session/steer", { text }));
  if (r) $("steer-text").value = "";
  await act(loadSession);
}

// -- master agent -------------------------------------------------------------------------------
async function loadConversation() {
  const data = await call("GET", `/projects/${CONV}?limit=${MESSAGES_SHOWN}`);
  state.conversation = data;
  renderConversation();
}
function renderConversation() {
  const c = state.conversation;
  if (!c) return;
  const box = $("messages");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const who = { user: "you", assistant: "master agent", system: "system" };
  // What the brain (or an operator) did, between the messages, in time order.
  const since = c.messages.length ? c.messages[0].ts : "";
  const items = [...c.messages.map((m) => ({ ts: m.ts || "", node: el("li", { class: `msg ${m.role}`, dataset: { id: m.id, role: m.role } },
    el("span", { class: "who" }, `${who[m.role] || ("worker " + (m.session_alias || ""))} · ${timeOf(m.ts)}`),
    m.text) })),
  ...(c.actions || []).filter((a) => (a.ts || "") >= since).map((a) => ({ ts: a.ts || "", node: el("li", { class: "msg action", dataset: { role: "action" } },
    el("span", { class: "who" }, `action · ${a.round === null ? "outside a round" : "round " + a.round} · by ${a.actor || a.by || "?"} · ${timeOf(a.ts)}`),
    a.text + (a.undo ? ` (undo: ${a.undo})` : "")) }))];
  items.sort((x, y) => (x.ts < y.ts ? -1 : x.ts > y.ts ? 1 : 0));
  box.replaceChildren(...items.map((x) => x.node));
  if (c.messagesTotal > c.messages.length) {
    box.prepend(el("li", { class: "msg system" }, `${c.messagesTotal - c.messages.length} earlier message(s): cocoplus chat log`));
  }
  if (atBottom) box.scrollTop = box.scrollHeight;
  const queued = c.pending.length && c.pending.every((p) => p.state === "queued");
  show($("thinking"), "Master agent is thinking…" + (queued ? " (queued)" : ""));
  $("thinking").hidden = !c.thinking;
  $("failed").hidden = !(c.failed && !c.thinking);
  if (c.failed) show($("failed-text"), `The master agent's reply failed: ${c.failed.error || "unknown error"}`);
  const model = c.model || "backend default";
  show($("chat-model"), `${model} · ${c.effort}` + (c.controller ? ` · ${c.controller}` : " · no controller account"));
}
async function sendMessage(ev) {
  ev.preventDefault();
  const input = $("chat-input");
  const text = input.value;
  if (!text.trim()) return;
  $("chat-send").disabled = true;
  const r = await act(() => call("POST", `/projects/${CONV}/messages`, { text }));
  $("chat-send").disabled = false;
  if (!r) return;
  input.value = "";
  // Show the message and the waiting state at once; the reply arrives through the event stream.
  const c = state.conversation;
  if (c && !c.messages.some((m) => m.id === r.message.id)) {
    c.messages.push(r.message);
    c.messagesTotal = (c.messagesTotal || 0) + 1;
    if (r.masterReplyState === "queued" || r.masterReplyState === "running") {
      c.pending.push({ id: r.task.id, state: r.task.state, kind: r.task.kind });
      c.thinking = true;
    } else if (r.masterReplyState === "failed") {
      c.failed = { id: r.task.id, error: r.task.error };
    }
    if (r.reply) { c.messages.push(r.reply); c.messagesTotal += 1; }
    renderConversation();
  }
  await act(loadConversation);
}
async function retryFailed() {
  const c = state.conversation;
  await act(() => call("POST", `/projects/${CONV}/retry`, c && c.failed ? { task_id: c.failed.id } : {}));
  await act(loadConversation);
}

// -- the "..." menu --------------------------------------------------------------------------------
function toggleMenu(open) {
  const menu = $("menu");
  const show = open === undefined ? menu.hidden : open;
  menu.hidden = !show;
  $("menu-btn").setAttribute("aria-expanded", String(show));
  if (show) menu.querySelector("li").focus();
}
function openPicker(kind) {
  const c = state.conversation || {};
  const isModel = kind === "model";
  const current = isModel ? c.modelOverride : c.reasoningEffortOverride;
  const options = isModel ? (c.modelOptions || []) : (c.reasoningEffortOptions || meta.enums.efforts || []);
  show($("picker-title"), isModel ? "Model for this conversation" : "Reasoning effort for this conversation");
  const box = $("picker-options");
  const choices = options.map((o) => ({ value: o, label: o }));
  if (isModel) choices.push({ value: "__other__", label: "Other…" });
  const effective = isModel ? (c.model || "backend default") : c.effort;
  choices.push({ value: "__default__", label: "Use the default", hint: `(now: ${effective}, from ${isModel ? c.modelSource : c.effortSource})` });
  box.replaceChildren(...choices.map((ch) => {
    const r = el("input", { type: "radio", name: "choice", value: ch.value });
    r.checked = ch.value === "__default__" ? !current : ch.value === current;
    return el("label", {}, r, ch.label, ch.hint ? el("span", { class: "hint" }, ch.hint) : null);
  }));
  const otherRow = $("picker-other-row");
  otherRow.hidden = true;
  $("picker-other").value = "";
  box.onchange = () => { otherRow.hidden = box.querySelector("input:checked")?.value !== "__other__"; };
  const dlg = $("picker");
  dlg.dataset.kind = kind;
  dlg.showModal();
}
async function savePicker(ev) {
  ev.preventDefault();
  const dlg = $("picker");
  const kind = dlg.dataset.kind;
  const picked = $("picker-options").querySelector("input:checked");
  if (!picked) { dlg.close(); return; }
  const key = kind === "model" ? "modelOverride" : "reasoningEffortOverride";
  let value = picked.value;
  if (value === "__default__") value = null;
  else if (value === "__other__") {
    value = $("picker-other").value.trim();
    if (!value) { $("picker-other").focus(); return; }
  }
  const data = await act(() => call("PATCH", `/projects/${CONV}`, { [key]: value }));
  if (data) {
    // `chat set`'s answer: the overrides and what a reply now uses; the messages stay as they are.
    state.conversation = { ...state.conversation, ...data };
    renderConversation();
    dlg.close();
  }
}
function showInfo() {
  const c = state.conversation || {};
  const rows = [
    ["conversation", c.conversation],
    ["controller", c.controller ? `${c.controller} (${c.controllerKind})` : "(none configured)"],
    ["model", `${c.model || "(backend default)"} [${c.modelSource}]`],
    ["reasoning effort", `${c.effort} [${c.effortSource}]`],
    ["overrides", `model=${c.modelOverride || "-"} effort=${c.reasoningEffortOverride || "-"}`],
    ["reply state", c.masterReplyState],
    ["worker", c.workerRunning ? "running" : "not running"],
    ["tasks", Object.entries(c.tasks || {}).map(([k, v]) => `${k} ${v}`).join(", ")],
    ...Object.entries(c.files || {}),
    ...((c.problems || []).map((p) => ["problem", p])),
  ];
  $("info-list").replaceChildren(...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v ?? "")]));
  $("info").showModal();
}
async function menuItem(item) {
  toggleMenu(false);
  await act(loadConversation);
  if (item === "model" || item === "effort") openPicker(item);
  else if (item === "info") showInfo();
}

// -- charts: each session's iterations and spend over time -------------------------------------------
// GET /api/v1/history gives what the files hold; the page keeps every point it has seen, so a count
// that grows while the page is open draws its whole path. Each session keeps one colour on both charts
// and in the session list, by order of first appearance. The palette: twelve hand-picked colours, then
// each next one the farthest (CIELAB) from all before it among HSL colours in 10-degree hue steps, so any
// two of the 36 are 20 or more apart (CIE76; tests/server/test_browser_sessions.py holds it); past them,
// golden-angle hue steps, dashed.
const seen = {};  // session id -> {alias, iterations: Map(ts -> n), spend: Map(ts -> usd)}
const charts = {};
const PALETTE = ["#2f6fdf", "#c8372d", "#1f8a4c", "#b7791f", "#7b4bc4", "#0f8b8d", "#d0468a", "#5a6b7d", "#e8702a",
  "#8c564b", "#17becf", "#7f7f00", "#0d0df2", "#0ac20a", "#f20df2", "#0da6f2", "#1f3d7a", "#993df5", "#910836",
  "#c20aa3", "#f20d0d", "#7a1f6b", "#4d9108", "#f20d59", "#0a29c2", "#0ac266", "#7a5c1f", "#d6705c", "#c2a30a",
  "#913608", "#f20d80", "#7a0891", "#c25cd6", "#293da3", "#086391", "#5c85d6"];
const colours = new Map();  // session id -> its index, in order of first appearance
const MARKERS_UP_TO = 30;   // a series with this many points or fewer shows each one as a marker
let historyTimer = null;
// The forecasts at the current rate (GET /api/v1/history's `forecast`): their lines under the charts, and on the
// spend chart the project's spend from its last measurement on to the limit at that rate (dashed, grey).
const FORECAST = "forecast";
let forecast = null;

function colourIndex(id) {
  if (!colours.has(id)) colours.set(id, colours.size);
  return colours.get(id);
}
function colourOf(i) {
  if (i < PALETTE.length) return PALETTE[i];
  const k = i - PALETTE.length;  // golden-angle steps: each hue far from the last ones, never the same
  return `hsl(${((k * 137.50776 + 20) % 360).toFixed(2)}, 65%, ${[40, 30, 50][k % 3]}%)`;
}
async function loadHistory() {
  const data = await call("GET", "/history");
  for (const s of data.sessions) {
    colourIndex(s.id);
    const h = seen[s.id] || (seen[s.id] = { alias: s.alias, iterations: new Map(), spend: new Map() });
    h.alias = s.alias || h.alias;
    for (const [ts, v] of s.iterations) h.iterations.set(ts, v);
    for (const [ts, v] of s.spend) h.spend.set(ts, v);
  }
  forecast = data.forecast || null;
  renderCharts();
  showForecast();
}
function showForecast() {
  const fc = forecast || {};
  const c = fc.cost || {}, it = fc.iterations || {}, lines = fc.lines || [];
  // The lines that forecast something: a budget that runs out (or has), a limited runtime's reset.
  const shown = lines.length < 2 ? [] : [
    ...(c.reserve || c.exhausted ? [lines[0]] : []), ...(it.cap_at ? [lines[1]] : []), ...lines.slice(2)];
  $("forecast").replaceChildren(...shown.map((line) => el("div", {}, inert(line))));
}
function historySoon() {  // bursts of events: one read
  if (historyTimer) return;
  historyTimer = setTimeout(() => { historyTimer = null; act(loadHistory); }, 500);
}
function aligned(kind) {
  // uPlot wants one x array: every time any session has a point. A session has a value at its own
  // points only (null elsewhere; its line spans them), so its line starts and ends where its run does.
  const ids = Object.keys(seen).filter((id) => seen[id][kind].size);
  const per = ids.map((id) => new Map([...seen[id][kind].entries()]
    .map(([ts, v]) => [Date.parse(ts) / 1000, v]).filter((p) => !Number.isNaN(p[0]))));
  const line = kind === "spend" && forecast && forecast.line ? forecast.line : [];
  if (line.length) {
    ids.push(FORECAST);
    per.push(new Map(line.map(([ts, v]) => [Date.parse(ts) / 1000, v]).filter((p) => !Number.isNaN(p[0]))));
  }
  const xs = [...new Set(per.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  const ys = per.map((m) => xs.map((x) => (m.has(x) ? m.get(x) : null)));
  const labels = ids.map((id) => (id === FORECAST ? "at the current rate (project)" : inert(seen[id].alias || id)));
  return { ids, labels, counts: per.map((m) => m.size), data: [xs, ...ys] };
}
// The time axis reaches a little past the first and last points: a run of one or two points (or a
// short one) is drawn inside the chart, never as a stroke on its edge. uPlot offers the data's extent
// (one day from a lone point); a range chosen by dragging over the chart is kept as it is.
function paddedRange(u, min, max) {
  const xs = u.data[0];
  if (min == null || max == null || !xs.length) return [min, max];
  const lo = xs[0], hi = xs[xs.length - 1];
  if (min !== lo || (max !== hi && lo !== hi)) return [min, max];
  const pad = hi > lo ? Math.max((hi - lo) * 0.05, 30) : 300;
  return [lo - pad, hi + pad];
}
// Time labels on one line each (HH:MM, with seconds when a tick falls between minutes), the date under
// the first tick of each day: short ranges stay readable (uPlot's own two-row labels collide there).
function timeTicks(u, splits) {
  const two = (n) => String(n).padStart(2, "0");
  const secs = splits.some((t) => t % 60 !== 0);
  let last = null;
  return splits.map((t) => {
    const d = new Date(t * 1000);
    const day = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
    const hm = `${two(d.getHours())}:${two(d.getMinutes())}` + (secs ? `:${two(d.getSeconds())}` : "");
    const label = day === last ? hm : `${hm}\n${day}`;
    last = day;
    return label;
  });
}
function renderChart(kind, boxId, title, fmt, stepped) {
  const box = $(boxId);
  if (charts[kind]) { charts[kind].destroy(); charts[kind] = null; }
  box.replaceChildren();
  const { ids, labels, counts, data } = aligned(kind);
  if (!labels.length || typeof uPlot === "undefined") {
    box.append(el("div", { class: "empty" }, title + ": no data yet"));
    return;
  }
  const series = [{}].concat(labels.map((label, i) => {
    if (ids[i] === FORECAST) {
      return {
        label, stroke: "#687083", width: 2, spanGaps: true, dash: [4, 4], paths: uPlot.paths.linear(),
        points: { show: true, size: 5, width: 1, stroke: "#687083", fill: "#687083" },
        value: (u, v) => (v == null ? "–" : fmt(v)),
      };
    }
    const n = colourIndex(ids[i]), colour = colourOf(n);
    return {
      label, stroke: colour, width: 2, spanGaps: true, dash: n < PALETTE.length ? undefined : [6, 3],
      paths: stepped ? uPlot.paths.stepped({ align: 1 }) : uPlot.paths.linear(),
      points: { show: counts[i] <= MARKERS_UP_TO, size: 7, width: 1, stroke: colour, fill: colour },
      value: (u, v) => (v == null ? "–" : fmt(v)),
    };
  }));
  charts[kind] = new uPlot({
    title, width: Math.max(240, box.clientWidth || 520), height: 160, series,
    scales: { x: { time: true, range: paddedRange } },
    axes: [{ stroke: "#687083", space: 70, values: timeTicks }, { stroke: "#687083", size: 56, values: (u, vals) => vals.map(fmt) }],
    legend: { live: false },
  }, data, box);
}
function renderCharts() {
  // Tool calls: straight lines between the counts the files keep (when each call was made is not kept).
  // Spend: steps at its records (it is spent at those moments).
  renderChart("iterations", "chart-iterations", "Tool calls per session", (v) => String(Math.round(v)), false);
  renderChart("spend", "chart-spend", "Spend per session (USD)", (v) => "$" + Number(v).toFixed(2), true);
}
window.addEventListener("resize", () => { if (Object.keys(seen).length) renderCharts(); });

// -- fleet (read-only; GET /api/v1/fleet needs the token) ------------------------------------------
const FLEET_EVERY_MS = 10000;
function ago(s) {
  if (s === null || s === undefined) return "never";
  if (s < 90) return `${Math.round(s)}s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}
async function loadFleet() {
  const card = $("fleet");
  if (!token()) {
    card.hidden = false;
    show($("fleet-summary"), "the fleet view needs the server's token");
    $("fleet-rows").replaceChildren();
    return;
  }
  let data;
  try {
    data = await call("GET", "/fleet", undefined, true);
  } catch (e) {
    card.hidden = false;
    show($("fleet-summary"), "fleet: " + e.message);
    $("fleet-rows").replaceChildren();
    return;
  }
  if (!data.configured) { card.hidden = true; return; }
  card.hidden = false;
  const s = data.summary;
  show($("fleet-summary"), `fleet ${data.fleet}: ${s.machines} machine(s), ${s.online} online; ` +
    `${s.projects} project(s), ${s.stopped} stopped; ${s.pending_commands} command(s) pending`);
  const rows = [];
  for (const m of data.machines) {
    for (const p of m.projects) {
      const ks = p.kill_switch || {};
      const stop = ks.present ? `STOPPED by ${ks.operator || "unknown"}: ${ks.reason || ""}` : (ks.present === false ? "running" : "unknown");
      const sessions = (p.sessions || []).map((x) => `${x.alias} ${x.state}${x.attention ? " (" + x.attention + ")" : ""}`).join(", ");
      rows.push(el("tr", { class: p.online ? "" : "offline" },
        el("td", {}, `${m.machine}/${p.project}`),
        el("td", {}, p.online ? "online" : `offline, ${ago(p.last_heard_s)}`),
        el("td", { class: ks.present ? "stopped" : "" }, stop),
        el("td", {}, sessions || "–"),
        el("td", {}, String(p.pending_count ?? "–"))));
    }
  }
  $("fleet-rows").replaceChildren(...rows);
}
setInterval(() => act(loadFleet), FLEET_EVERY_MS);

// -- the inbox and the workers (GET /api/v1/inbox needs the token; the decision page /inbox is the full view) ----
const INBOX_EVERY_MS = 5000;
async function loadInbox() {
  if (!token()) {
    show($("inbox-service"), "the open decisions and the workers need the server's token");
    $("inbox-rows").replaceChildren();
    $("worker-rows").replaceChildren();
    return;
  }
  const data = await call("GET", "/inbox", undefined, true);
  const svc = data.service || {};
  show($("inbox-service"), svc.running ? `cocoplus inbox run is running (pid ${svc.pid})` : (svc.note || "inbox: –"));
  const answer = (d, action) => act(async () => {
    await call("POST", `/inbox/decisions/${encodeURIComponent(d.id)}`, { action });
    await loadInbox();
  });
  $("inbox-rows").replaceChildren(...(data.decisions || []).map((d) => el("li", { "data-id": d.id },
    el("a", { href: `/inbox/d/${encodeURIComponent(d.id)}` }, d.summary), " ",
    el("span", { class: "muted" }, `${d.kind} · ${String(d.project || "").split("/").pop()}`), " ",
    ...(d.actions.includes("approve") ? [
      el("button", { type: "button", "data-action": "approve", onclick: () => answer(d, "approve") }, "Allow"), " ",
      el("button", { type: "button", class: "danger", "data-action": "deny", onclick: () => answer(d, "deny") }, "Deny")] : []))));
  if (!(data.decisions || []).length) $("inbox-rows").replaceChildren(el("li", { class: "muted" }, "nothing waits for you"));
  const workers = data.workers || [];
  $("worker-rows").replaceChildren(...workers.map((w) => el("tr", { "data-worker": w.id },
    el("td", {}, w.id), el("td", {}, w.state_text), el("td", {}, w.runtime_text), el("td", {}, w.sandbox || "none"),
    el("td", {}, w.project),
    el("td", {}, w.ended_text || "–"))));
  $("workers-empty").hidden = workers.length > 0;
}
setInterval(() => act(loadInbox), INBOX_EVERY_MS);
// A key or a click here: you are at a screen, so the inbox pushes nothing to your phone for a while.
let lastPresence = 0;
function presence() {
  if (!token() || Date.now() - lastPresence < 10000) return;
  lastPresence = Date.now();
  call("POST", "/inbox/presence").catch(() => {});
}
for (const kind of ["keydown", "pointerdown"]) document.addEventListener(kind, presence, { passive: true });

// -- the summary (GET /api/v1/summary: `cocoplus summary`, the last 12 hours) --------------------------------
const SUMMARY_EVERY_MS = 30000;
async function loadSummary() {
  const data = await call("GET", "/summary");
  const stories = data.workers || [];
  const waiting = (data.waiting || []).length + stories.reduce((n, s) => n + (s.waiting || []).length, 0);
  show($("summary-total"), `${stories.length} worker(s), $${Number(data.spent_usd || 0).toFixed(2)} spent, ${waiting} waiting for you`);
  $("summary-rows").replaceChildren(...stories.map((s) => {
    const ch = s.changed || {};
    const merged = ch.merged === null || ch.merged === undefined ? "" : (ch.merged ? ", merged" : ", not merged");
    return el("tr", { "data-worker": s.worker },
      el("td", {}, s.alias && s.alias !== s.worker ? `${s.worker} (${s.alias})` : s.worker),
      el("td", {}, s.asked), el("td", {}, s.ended),
      el("td", {}, `$${Number(s.cost_usd || 0).toFixed(2)} · ${s.tool_calls} calls`),
      el("td", {}, `${ch.stat || "?"} (${ch.where || "?"}${merged})`),
      el("td", {}, (s.waiting || []).map((d) => d.summary || d.kind).join("; ") || "–"));
  }));
}
setInterval(() => act(loadSummary), SUMMARY_EVERY_MS);

// -- the trace export (GET /api/v1/telemetry: `cocoplus telemetry status`), polled every few seconds ---------------
// Shown when traces are configured or an export was tried: where to and who exports, or the problem (nothing
// exporting; a failed export, a 401 said as an authentication failure).
const TELEMETRY_EVERY_MS = 5000;
async function loadTelemetry() {
  const t = await call("GET", "/telemetry");
  const line = $("traces");
  const shown = t.configured || t.problem || t.last;
  line.hidden = !shown;
  if (!shown) return;
  show(line, t.problem ? `traces: ${t.problem}` : `traces: to ${t.endpoint}, exported by ${t.process} (pid ${t.exporting})`);
  line.classList.toggle("failed", !!t.problem);
}
setInterval(() => act(loadTelemetry), TELEMETRY_EVERY_MS);

// -- the timeline (GET /api/v1/timeline: `cocoplus timeline`) and its what-if (GET /api/v1/replay) ---------------
// One lane per worker (a session of no worker has its own; the rest is the project's), drawn as an SVG: the mouse
// wheel or +/- zooms, a drag pans, Fit shows every event, and a click (or Enter) on an event shows its detail.
const SVG = "http://www.w3.org/2000/svg";
const TL_KIND_COLOURS = {
  stop: "#c8372d", refusal: "#e0645b", failover: "#b0309e", limit: "#c05fc0", verdict: "#c98a00",
  permission: "#d4a017", steer: "#1793a8", cost: "#1f8a4c", round: "#2f6fdf", merge: "#0f6b36",
  worker: "#1d2330", tool: "#8b93a5", edit: "#a8afbd", signal: "#6a7fbf", step: "#9aa2b1",
};
const TL = { LABEL: 240, AXIS: 22, LANE: 36, PAD: 12, MIN_SPAN_MS: 20 };
const TL_LOW = new Set(["tool", "edit"]);  // a lane's lower row: its tool calls and edits; the rest above them
const tl = { data: null, lanes: [], events: [], full: null, view: null, zoomed: false, picked: null, stop: null, timer: null };
function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = inert(text);
  return node;
}
function tlTime(ts) { const t = Date.parse(ts || ""); return Number.isFinite(t) ? t : null; }
function tlStamp(t, span) {
  const iso = new Date(t).toISOString();
  if (span > 2 * 86400000) return iso.slice(5, 16).replace("T", " ");
  return iso.slice(11, span > 600000 ? 16 : span > 10000 ? 19 : 23);
}
function tlLaneOf(e, owner) {
  if (e.worker) return "w:" + e.worker;
  if (e.session && owner[e.session]) return "w:" + owner[e.session];
  if (e.session) return "s:" + e.session;
  return "project";
}
function tlLanes(data) {
  const workers = data.workers || {};
  const owner = {};
  for (const [wid, w] of Object.entries(workers)) for (const cs of w.sessions || []) owner[cs] = wid;
  const lanes = new Map();
  for (const [wid, w] of Object.entries(workers)) {
    const ran = (w.runtimes || [w.runtime]).filter((x) => x).join(" → ");
    lanes.set("w:" + wid, { key: "w:" + wid, run: wid, label: wid + (w.alias && w.alias !== wid ? ` (${w.alias})` : ""),
      sub: `${ran || "?"} · sandbox ${w.sandbox || "none"}`, sandbox: w.sandbox || "none", events: [] });
  }
  const events = [];
  for (const e of data.events || []) {
    const t = tlTime(e.ts);
    if (t === null) continue;
    const key = tlLaneOf(e, owner);
    if (!lanes.has(key)) {
      lanes.set(key, key === "project" ? { key, run: null, label: "project", sub: "rounds, stops, costs", events: [] }
        : { key, run: e.alias || e.session, label: e.alias || e.session, sub: `session · ${e.runtime || "?"}`, events: [] });
    }
    const ev = { e, t, lane: lanes.get(key) };
    lanes.get(key).events.push(ev);
    events.push(ev);
  }
  const order = [...lanes.values()].filter((l) => l.events.length || l.key.startsWith("w:"));
  order.sort((a, b) => (a.key === "project") - (b.key === "project") || a.key.localeCompare(b.key, undefined, { numeric: true }));
  return { lanes: order, events };
}
async function loadTimeline() {
  const who = $("tl-worker").value;
  const since = $("tl-since").value;
  const q = new URLSearchParams();
  if (who) q.set("worker", who);
  if (since) { q.set("since", since); q.set("limit", "5000"); }
  const data = await call("GET", "/timeline" + (q.toString() ? "?" + q : ""));
  tl.data = data;
  const { lanes, events } = tlLanes(data);
  tl.lanes = lanes;
  tl.events = events;
  const ts = events.map((x) => x.t);
  if (ts.length) {
    const lo = Math.min(...ts), hi = Math.max(...ts);
    const pad = Math.max((hi - lo) * 0.03, TL.MIN_SPAN_MS);
    tl.full = [lo - pad, hi + pad];
  } else tl.full = null;
  if (!tl.zoomed || !tl.view) tl.view = tl.full;
  tlWorkerChoices(data);
  drawTimeline();
  const shown = (data.events || []).length;
  show($("tl-note"), (data.total > shown ? `the newest ${shown} of ${data.total} events` : `${shown} event(s)`) +
    ((data.problems || []).length ? `; ${data.problems.length} line(s) or file(s) could not be read` : ""));
}
function tlWorkerChoices(data) {
  const box = $("tl-worker"), runs = $("tl-run");
  const wids = Object.keys(data.workers || {});
  const known = new Set([...box.options].map((o) => o.value));
  for (const wid of wids) if (!known.has(wid)) box.append(el("option", { value: wid }, `${wid} (sandbox ${data.workers[wid].sandbox || "none"})`));
  const keep = runs.value;
  const choices = tl.lanes.filter((l) => l.run);
  runs.replaceChildren(...choices.map((l) => el("option", { value: l.run }, l.key.startsWith("w:") ? `worker ${l.label}` : `session ${l.label}`)));
  if (keep && choices.some((l) => l.run === keep)) runs.value = keep;
  $("tl-replay-btn").disabled = !choices.length;
}
function tlTicks(v0, v1, width) {
  const steps = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 5, 15, 30, 60, 300, 900, 1800, 3600, 10800, 21600, 43200, 86400, 172800, 604800].map((s) => s * 1000);
  const want = (v1 - v0) / Math.max(2, Math.floor(width / 110));
  const step = steps.find((s) => s >= want) || steps[steps.length - 1];
  const out = [];
  for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) out.push(t);
  return out;
}
function drawTimeline() {
  const box = $("tl-lanes");
  if (!tl.events.length || !tl.view) {
    box.replaceChildren(el("div", { class: "empty muted small" }, "No events recorded" + ($("tl-worker").value ? ` for ${$("tl-worker").value}` : "") + "."));
    show($("tl-range"), "");
    return;
  }
  const W = Math.max(box.clientWidth || 800, 400);
  const H = TL.AXIS + tl.lanes.length * TL.LANE + 4;
  const [v0, v1] = tl.view;
  const plot = W - TL.LABEL - TL.PAD;
  const x = (t) => TL.LABEL + ((t - v0) / (v1 - v0)) * plot;
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, height: H, "data-from": new Date(v0).toISOString(), "data-to": new Date(v1).toISOString() });
  // The dots are drawn within the plot (clipped), never over the lanes' labels.
  const clip = svgEl("clipPath", { id: "tl-clip" });
  clip.append(svgEl("rect", { x: TL.LABEL - 7, y: 0, width: plot + TL.PAD + 7, height: H }));
  const defs = svgEl("defs", {});
  defs.append(clip);
  svg.append(defs);
  for (const t of tlTicks(v0, v1, plot)) {
    svg.append(svgEl("line", { class: "grid", x1: x(t), x2: x(t), y1: TL.AXIS - 4, y2: H }));
    if (x(t) + 90 < W) svg.append(svgEl("text", { class: "tick", x: x(t) + 3, y: 13 }, tlStamp(t, v1 - v0)));
  }
  tl.lanes.forEach((lane, i) => {
    const y = TL.AXIS + i * TL.LANE;
    const g = svgEl("g", { class: "lane", "data-lane": lane.key });
    g.append(svgEl("line", { class: "grid", x1: 0, x2: W, y1: y + TL.LANE, y2: y + TL.LANE }));
    g.append(svgEl("text", { class: "lane-label", x: 6, y: y + 15 }, lane.label));
    g.append(svgEl("text", { class: "lane-sub", x: 6, y: y + 29 }, lane.sub));
    const dots = svgEl("g", { "clip-path": "url(#tl-clip)" });
    g.append(dots);
    for (const ev of lane.events) {
      if (ev.t < v0 || ev.t > v1) continue;
      const e = ev.e;
      const dot = svgEl("circle", {
        class: "ev" + (e.detail && e.detail.ts_estimated ? " estimated" : "") + (tl.picked === e.id ? " picked" : ""),
        cx: x(ev.t).toFixed(1), cy: y + (TL_LOW.has(e.kind) ? 26 : 11), r: TL_LOW.has(e.kind) ? 4 : 6,
        fill: TL_KIND_COLOURS[e.kind] || "#687083", tabindex: 0, role: "button",
        "data-id": e.id, "data-kind": e.kind, "aria-label": inert(`${e.kind}: ${e.text}`),
      });
      dot.append(svgEl("title", {}, `${(e.ts || "").replace("T", " ").slice(0, 19)} ${e.kind}: ${e.text}`));
      dot.addEventListener("click", (evt) => { evt.stopPropagation(); tlPick(e, lane); });
      dot.addEventListener("keydown", (evt) => { if (evt.key === "Enter" || evt.key === " ") { evt.preventDefault(); tlPick(e, lane); } });
      dots.append(dot);
    }
    svg.append(g);
  });
  if (tl.stop && tl.stop.t >= v0 && tl.stop.t <= v1) {
    const i = Math.max(0, tl.lanes.findIndex((l) => l.run === tl.stop.run || l.key === "w:" + tl.stop.run));
    const y = TL.AXIS + i * TL.LANE;
    svg.append(svgEl("line", { class: "stopline", x1: x(tl.stop.t), x2: x(tl.stop.t), y1: y, y2: y + TL.LANE }));
    svg.append(svgEl("text", { class: "stoplabel", x: x(tl.stop.t) + 4, y: y + 10, id: "tl-stop-mark" }, tl.stop.label));
  }
  box.replaceChildren(svg);
  show($("tl-range"), `${tlStamp(v0, v1 - v0)} – ${tlStamp(v1, v1 - v0)} UTC` + (tl.zoomed ? " (zoomed)" : ""));
}
function tlPick(e, lane) {
  tl.picked = e.id;
  const rows = [["when", (e.ts || "?").replace("T", " ") + (e.detail && e.detail.ts_estimated ? " (estimated)" : "")],
    ["kind", e.kind], ["lane", lane.label], ["source", e.source], ["id", e.id]];
  if (lane.sandbox) rows.push(["sandbox", lane.sandbox]);
  for (const k of ["worker", "session", "alias", "runtime"]) if (e[k]) rows.push([k, e[k]]);
  for (const [k, v] of Object.entries(e.detail || {})) {
    if (v === null || v === undefined || v === "" || (k === "ts" && v === e.ts)) continue;
    rows.push([k, typeof v === "object" ? JSON.stringify(v) : String(v)]);
  }
  const dl = el("dl", {});
  for (const [k, v] of rows) dl.append(el("dt", {}, k), el("dd", {}, v));
  $("tl-detail").replaceChildren(el("div", { class: "headline" }, e.text), dl);
  $("tl-detail").dataset.id = e.id;
  $("tl-detail").hidden = false;
  if (lane.run && [...$("tl-run").options].some((o) => o.value === lane.run)) $("tl-run").value = lane.run;
  drawTimeline();
}
function tlZoom(factor, at) {
  if (!tl.view || !tl.full) return;
  const [v0, v1] = tl.view;
  const span = Math.max((v1 - v0) * factor, TL.MIN_SPAN_MS);
  const fullSpan = tl.full[1] - tl.full[0];
  if (span >= fullSpan) { tlFit(); return; }
  // Around the pointer (the wheel), else around the event picked while it is in view, else the middle.
  const picked = tl.events.find((x) => x.e.id === tl.picked);
  const c = at !== undefined ? at : (picked && picked.t >= v0 && picked.t <= v1 ? picked.t : (v0 + v1) / 2);
  const left = c - ((c - v0) / (v1 - v0)) * span;
  tl.view = [left, left + span];
  tl.zoomed = true;
  drawTimeline();
}
function tlFit() { tl.view = tl.full; tl.zoomed = false; drawTimeline(); }
function tlTimeAt(clientX) {
  const box = $("tl-lanes").getBoundingClientRect();
  const W = Math.max(box.width, 400);
  const scale = W / (box.width || W);
  const px = (clientX - box.left) * scale;
  const [v0, v1] = tl.view;
  return v0 + ((px - TL.LABEL) / (W - TL.LABEL - TL.PAD)) * (v1 - v0);
}
function tlSoon() {
  if (tl.timer) return;
  tl.timer = setTimeout(() => { tl.timer = null; act(loadTimeline); }, 1000);
}
async function whatIf(ev) {
  ev.preventDefault();
  const run = $("tl-run").value;
  if (!run) return;
  const q = new URLSearchParams({ run, max_iterations: $("tl-cap").value });
  if ($("tl-guard").value !== "") q.set("loop_guard_repeats", $("tl-guard").value);
  if ($("tl-budget").value !== "") q.set("budget_limit", $("tl-budget").value);
  const rep = await call("GET", "/replay?" + q);
  const out = [el("div", { class: "headline" }, `Replay of ${rep.kind} ${rep.run} (${rep.sessions.length} session(s)): ${rep.calls} tool call(s) replayed, ` +
    `max_iterations ${rep.policy.max_iterations}, loop_guard_repeats ${rep.policy.loop_guard_repeats}`)];
  const stop = rep.stopped_at;
  if (stop) {
    const why = stop.why === "loop_guard"
      ? `the loop guard: the same call${stop.tool ? ` (${stop.tool} ${stop.subject})` : ""} ${stop.repeats} times in a row from call ${stop.first_call}`
      : stop.why === "iteration_cap" ? `the iteration cap (${stop.cap}, ${stop.by})`
      : stop.why === "cost_budget" ? `the cost budget ($${Number(stop.limit_usd).toFixed(2)}, $${Number(stop.spent_usd).toFixed(4)} spent at a stage boundary)`
      : String(stop.why).replaceAll("_", " ");
    const cost = rep.cost_usd_to_stop === null ? "unknown" : `$${Number(rep.cost_usd_to_stop).toFixed(4)}` + (rep.cost_estimated ? " (estimated)" : "");
    out.push(el("div", { id: "tl-replay-stop" }, `It would have stopped at tool call ${stop.call} (${stop.alias || stop.session}) by ${why}; cost up to there ${cost}, of $${Number(rep.cost_usd_recorded).toFixed(4)} recorded.`));
    const t = tlTime(stop.ts);
    tl.stop = t === null ? null : { t, run: rep.kind === "worker" ? rep.run : (stop.alias || rep.run), label: `stops at call ${stop.call}` };
  } else {
    out.push(el("div", { id: "tl-replay-stop" }, `It would not have been stopped (recorded cost $${Number(rep.cost_usd_recorded).toFixed(4)}).`));
    tl.stop = null;
  }
  const asks = rep.decisions.filter((d) => d.decision !== "stop");
  if (asks.length) out.push(el("ul", {}, ...asks.map((d) => el("li", {}, `call ${d.call}: ${d.decision} (${d.why})`))));
  const diff = rep.first_difference;
  if (diff) {
    const was = diff.recorded ? `recorded ${diff.recorded.decision} (${diff.recorded.why})` : "nothing recorded";
    out.push(el("div", {}, `First difference: ${was}; replayed ${diff.replayed ? `${diff.replayed.decision} at call ${diff.replayed.call}` : "nothing"}.`));
  } else out.push(el("div", {}, "The same decisions as recorded."));
  for (const item of rep.not_replayed || []) out.push(el("div", { class: "muted" }, `not replayed: ${item}`));
  $("tl-replay").replaceChildren(...out);
  $("tl-replay").hidden = false;
  drawTimeline();
}
function wireTimeline() {
  $("tl-worker").addEventListener("change", () => { tl.zoomed = false; tl.stop = null; act(loadTimeline); });
  $("tl-since").addEventListener("change", () => { tl.zoomed = false; act(loadTimeline); });
  $("tl-zoom-in").addEventListener("click", () => tlZoom(0.5));
  $("tl-zoom-out").addEventListener("click", () => tlZoom(2));
  $("tl-fit").addEventListener("click", tlFit);
  $("tl-whatif").addEventListener("submit", (ev) => act(() => whatIf(ev)));
  const box = $("tl-lanes");
  box.addEventListener("wheel", (ev) => {
    if (!tl.view) return;
    ev.preventDefault();
    tlZoom(ev.deltaY < 0 ? 0.8 : 1.25, tlTimeAt(ev.clientX));
  }, { passive: false });
  let drag = null;
  box.addEventListener("pointerdown", (ev) => {
    if (!tl.view || ev.target.closest(".ev")) return;
    drag = { x: ev.clientX, view: tl.view.slice() };
    box.classList.add("panning");
    box.setPointerCapture(ev.pointerId);
  });
  box.addEventListener("pointermove", (ev) => {
    if (!drag) return;
    const plot = Math.max(box.clientWidth, 400) - TL.LABEL - TL.PAD;
    const dt = ((ev.clientX - drag.x) / plot) * (drag.view[1] - drag.view[0]);
    if (Math.abs(ev.clientX - drag.x) < 3) return;
    tl.view = [drag.view[0] - dt, drag.view[1] - dt];
    tl.zoomed = true;
    drawTimeline();
  });
  const end = () => { drag = null; box.classList.remove("panning"); };
  box.addEventListener("pointerup", end);
  box.addEventListener("pointercancel", end);
  window.addEventListener("resize", () => { if (tl.view) drawTimeline(); });
}

// -- live updates --------------------------------------------------------------------------------
async function loadAll() {
  await Promise.all([act(loadAutonomous), act(loadSessions), act(loadSession), act(loadConversation), act(loadHistory), act(loadFleet), act(loadInbox), act(loadSummary), act(loadTelemetry), act(loadTimeline)]);
}
// The indicator says "connecting…" until the event stream first opens, "live" while it is open,
// "reconnecting" once an open stream is lost and "offline" when it could not be opened (the browser
// retries; a refused stream is tried again every few seconds).
let everLive = false;
function setLive(text, cls, title) {
  const live = $("live");
  show(live, text);
  live.className = "pill " + cls;
  live.title = title;
}
function connectEvents() {
  const es = new EventSource(API + "/events");
  es.onopen = () => { everLive = true; setLive("live", "on", "live updates from /api/v1/events"); loadAll(); };
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED) {
      setLive("offline", "off", "the event stream was refused; trying again");
      setTimeout(connectEvents, 5000);
    } else if (everLive) setLive("reconnecting", "off", "the event stream was lost; reconnecting");
    else setLive("offline", "off", "the event stream cannot be opened; trying again");
  };
  const on = (topic, fn) => es.addEventListener(topic, (ev) => fn(JSON.parse(ev.data || "{}")));
  on("session", () => { act(loadSession); historySoon(); });
  on("sessions", () => { act(loadSessions); historySoon(); tlSoon(); });
  on("supervision", () => { act(loadAutonomous); act(loadSessions); tlSoon(); });
  on("round", () => { act(loadAutonomous); tlSoon(); });
  on("ledger", (d) => { if (!d.conversations || !d.conversations.length || d.conversations.includes(CONV)) act(loadConversation); });
  on("resync", () => loadAll());
}
// A slow poll while a reply is pending, in case an event is missed.
setInterval(() => { if (state.conversation && state.conversation.thinking) act(loadConversation); }, 3000);

// -- wiring ----------------------------------------------------------------------------------------
function wire() {
  wireTimeline();
  $("sup-switch").addEventListener("change", toggleSupervision);
  for (const id of ["task-hint", "max-turns"]) $(id).addEventListener("input", () => { $(id).dataset.edited = "1"; });
  $("invert").addEventListener("click", invertVisible);
  $("scope-all").addEventListener("click", scopeAll);
  $("show-ended").addEventListener("click", toggleEnded);
  $("stop-btn").addEventListener("click", stopAgent);
  $("resume-btn").addEventListener("click", resumeAgent);
  $("steer-btn").addEventListener("click", sendSteer);
  $("chat-form").addEventListener("submit", sendMessage);
  $("chat-input").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); $("chat-form").requestSubmit(); }
  });
  $("retry").addEventListener("click", retryFailed);
  $("menu-btn").addEventListener("click", (ev) => { ev.stopPropagation(); toggleMenu(); });
  for (const li of $("menu").querySelectorAll("li")) {
    li.addEventListener("click", () => menuItem(li.dataset.item));
    li.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); menuItem(li.dataset.item); }
      else if (ev.key === "ArrowDown") (li.nextElementSibling || li.parentElement.firstElementChild).focus();
      else if (ev.key === "ArrowUp") (li.previousElementSibling || li.parentElement.lastElementChild).focus();
      else if (ev.key === "Escape") { toggleMenu(false); $("menu-btn").focus(); }
    });
  }
  document.addEventListener("click", (ev) => { if (!$("menu").hidden && !ev.target.closest(".menu-wrap")) toggleMenu(false); });
  $("picker-form").addEventListener("submit", savePicker);
  $("picker-cancel").addEventListener("click", () => $("picker").close());
  $("info-close").addEventListener("click", () => $("info").close());
  $("error-close").addEventListener("click", () => { $("error").hidden = true; });
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const t = $("token-input").value.trim();
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    $("token-input").value = "";
    showTokenBanner();
    act(loadFleet);
    act(loadInbox);
  });
}

takeTokenFromFragment();
document.addEventListener("DOMContentLoaded", async () => {
  wire();
  showTokenBanner();
  await act(loadMeta);
  loadAll();
  connectEvents();
});
