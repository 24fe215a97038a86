// page.js: memfloord's web page.  The controls build a Job manifest; the
// page sends it to this daemon's JSON API (POST /v1/admit, POST
// /v1/estimate, GET /v1/catalog, GET /v1/models, GET /v1/calibration) and
// shows the answers.
// The controls themselves are made from GET /v1/schema: which fields there
// are, which workloads each applies to, their values and defaults.
// Every figure shown comes from an answer: the page only formats them
// (bytes as GB, fractions as percentages) and scales the bars.  Text from
// answers and requests is set with textContent, never parsed as HTML.
"use strict";

// The form's fields, one per leaf of the Job schema (GET /v1/schema) that a
// control sets: its query-string name (design 17: the workload fields by
// name), the manifest path, how it is edited, its allowed values, its
// default (a value equal to it is left out of the manifest and the link)
// and when it applies, all as the schema says (buildFields).
let FIELDS = [];
const ESTIMATORS = ["pytorch", "post"]; // design section 13; pytorch first
const DEFAULT_MODEL = "meta-llama/Llama-3.1-8B";

const $ = (id) => document.getElementById(id);
const controls = {}; // q -> element (for fixes: the fieldset)
let fixNames = [];   // allowedFixes' values, from the schema
let generation = 0;  // answers to an older generation are dropped
let timer = 0;        // a scheduled update, or 0

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") e.textContent = v;
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}

// --- formatting (no arithmetic on the figures beyond units) --------------

const gb = (b) => (b === null || b === undefined ? "—"
  : (b / 1e9).toFixed(1) + " GB");
const money = (x) => (x === null || x === undefined ? "—"
  : "$" + x.toFixed(2));
const num = (x, d) => (x === null || x === undefined ? "—" : x.toFixed(d));
const whole = (x) => (x === null || x === undefined ? "—"
  : x.toLocaleString("en-US"));
const pct = (f) => (f === null || f === undefined ? "—"
  : Math.round(f * 100) + "%");
// An error as a signed percentage: + is the safe side.
const signed = (f) => (f === null || f === undefined ? "—"
  : (f > 0 ? "+" : "") + (f * 100).toFixed(1) + "%");

// An element tests and scripts can find: data-mf names the figure and
// data-value holds it exactly as the API gave it.
function figure(name, value, text) {
  return el("data", { "data-mf": name,
    "data-value": value === null || value === undefined ? "" : String(value),
    value: value === null || value === undefined ? "" : String(value),
    text: text === undefined ? String(value) : text });
}

// --- the form ---------------------------------------------------------

// Where a manifest path sits on the page and its query-string name, or
// null for what the page sets its own way (the model, the header).
function place(path) {
  if (path === "metadata.name") return { group: "job", q: "name" };
  if (path === "spec.allowedFixes") return { group: "fixes", q: "allowedFixes" };
  const w = "spec.workload.";
  if (path.startsWith(w)) {
    const rel = path.slice(w.length);
    const par = "parallelism.";
    return { group: "workload", q: rel.startsWith(par) ? rel.slice(par.length) : rel };
  }
  for (const p of ["spec.resources.gpu.", "spec.duration.", "spec.limits."])
    if (path.startsWith(p)) return { group: "resources", q: path.slice(p.length) };
  return null;
}

// A value of the schema as a control holds it.
const text = (v) => (v === undefined || v === null ? "" : String(v));

// The field of property s at path, under conditions inherited from the
// objects around it.
function field(s, path, pl, when) {
  const f = { q: pl.q, path, group: pl.group, label: s.title || pl.q,
    doc: s.description || "", hint: s["x-memfloor-unit"] || "",
    when: when.concat(Object.entries(s["x-memfloor-when"] || {})),
    valueWhen: s["x-memfloor-value-when"] || {} };
  const anyOf = s.anyOf || [];
  const values = s.enum || (anyOf.find((a) => a.enum) || {}).enum;
  const count = anyOf.find((a) => a.type === "integer" && !a.enum);
  if (s.type === "array") {
    f.type = "fixes";
    fixNames = s.items.enum.slice();
  } else if (s.type === "boolean") {
    f.type = "checkbox";
  } else if (values) {
    f.type = "select";
    f.values = values;
    f.options = values.map(text);
    // A whole number of its own (gradientCheckpointing: every Nth layer).
    f.count = !!count;
    if (f.count) f.hint = "or " + count.description;
    if (!("default" in s)) {
      f.options.unshift("");
      f.blank = s["x-memfloor-default"] ? "as " + s["x-memfloor-default"].replace(/^that of /, "") : "";
    }
  } else {
    f.type = s.type === "integer" ? "int" : s.type === "number" ? "num" : "text";
    if (count && anyOf.some((a) => a.pattern)) f.hint = "e.g. 88Gi";
  }
  // Where the API has no default, the page starts from the schema's
  // example and keeps it in the manifest (sequenceLength 4096).
  f.def = f.type === "fixes" ? [] : f.type === "checkbox" ? s.default === true
    : "default" in s ? text(s.default) : text((s.examples || [])[0]);
  f.keep = !("default" in s) && !!s.examples;
  return f;
}

// Every field below the schema object s (at path), in the schema's order.
function walk(s, path, when, out) {
  for (const [k, p] of Object.entries(s.properties || {})) {
    const at = path ? path + "." + k : k;
    const pl = place(at);
    if (p.type === "object" && p.properties && !p.propertyNames)
      walk(p, at, when.concat(Object.entries(p["x-memfloor-when"] || {})), out);
    else if (pl && p.type !== "object")
      out.push(field(p, at, pl, when));
  }
  return out;
}

// metadata.name comes first: FIELDS[0] is the job's name.
function buildFields(schema) {
  FIELDS = walk(schema, "", [], []);
}

const controlId = (f) => "f-" + f.q.replace(".", "-");

function buildForm() {
  for (const f of FIELDS) {
    const box = $("group-" + f.group);
    const id = controlId(f);
    const err = el("p", { class: "err", id: "err-" + id, "aria-live": "polite" });
    let c;
    if (f.type === "fixes") {
      c = el("div", { class: "fixes", id: id, role: "group",
        "aria-labelledby": "legend-fixes" });
      controls[f.q] = c;
      box.append(c, err);
      continue;
    }
    if (f.type === "select") {
      c = el("select", { id: id });
      for (const o of f.options)
        c.append(el("option", { value: o, text: o === "" ? f.blank : o }));
    } else if (f.type === "checkbox") {
      c = el("input", { id: id, type: "checkbox" });
    } else {
      c = el("input", { id: id, type: "text", autocomplete: "off",
        spellcheck: "false",
        inputmode: f.type === "int" ? "numeric" : f.type === "num" ? "decimal" : null });
    }
    c.setAttribute("aria-describedby", err.id);
    controls[f.q] = c;
    const label = el("label", { for: id, title: f.doc }, f.label,
      f.hint ? el("span", { class: "hint", text: " " + f.hint }) : null);
    const wrap = el("div", { class: "field " + f.type, id: "w-" + id });
    if (f.type === "checkbox") wrap.append(c, label, err);
    else wrap.append(label, c, err);
    box.append(wrap);
  }
}

function fillFixes(names, chosen) {
  const box = controls.allowedFixes;
  box.replaceChildren();
  for (const n of names) {
    const id = "fix-" + n;
    const c = el("input", { type: "checkbox", id: id, value: n });
    c.checked = chosen.includes(n);
    box.append(el("span", { class: "fix" }, c, el("label", { for: id, text: n })));
  }
}

function chosenFixes() {
  return [...controls.allowedFixes.querySelectorAll("input:checked")]
    .map((c) => c.value);
}

function setControl(f, v) {
  const c = controls[f.q];
  if (f.type === "fixes") {
    const list = Array.isArray(v) ? v : String(v).split(",").filter(Boolean);
    for (const n of list) if (!fixNames.includes(n)) fixNames.push(n);
    fillFixes(fixNames, list);
  } else if (f.type === "checkbox") {
    c.checked = v === true || v === "true";
  } else {
    // A value a link brings that the page does not list is kept, for the
    // API to judge (and name in its error).
    if (f.type === "select" && !f.options.includes(String(v)))
      c.append(el("option", { value: String(v), text: String(v) }));
    c.value = String(v);
  }
}

function controlValue(f) {
  const c = controls[f.q];
  if (f.type === "fixes") return chosenFixes();
  if (f.type === "checkbox") return c.checked;
  return c.value.trim();
}

function source() {
  return document.querySelector("input[name=source]:checked").value;
}

// The view's state: what the controls say.
function state() {
  const s = { source: source(), estimator: $("estimator").value };
  for (const f of FIELDS) s[f.q] = controlValue(f);
  return s;
}

// Whether the state s holds one of values in the field at path (the
// schema's x-memfloor-when).
function holds(s, path, values) {
  const c = FIELDS.find((x) => x.path === path);
  return !c || values.map(text).includes(s[c.q] === "" ? c.def : text(s[c.q]));
}

// The options of a select that apply to the state (x-memfloor-value-when).
function available(f, s) {
  return f.options.filter((o) => Object.entries(f.valueWhen[o] || {})
    .every(([p, v]) => holds(s, p, v)));
}

function applies(f, s) {
  if (s.source === "manifest") return false;
  if (s.source === "floor" && f.group === "workload") return false;
  if (!f.when.every(([p, v]) => holds(s, p, v))) return false;
  if (f.type !== "select" || !Object.keys(f.valueWhen).length) return true;
  // Nothing to choose but the default (a method in inference): hidden.
  const a = available(f, s);
  return a.includes(text(s[f.q])) && !(a.length === 1 && a[0] === f.def);
}

// What a field's text is in the manifest: the schema's value for an
// option, a number where one is taken and it reads as one, else the text
// itself, for the API to name in its error.
function typed(f, v) {
  if (f.type === "checkbox" || f.type === "fixes" || f.type === "text") return v;
  if (f.type === "select") {
    // An option is the schema's value as it is (true, 64, "op").
    const i = f.options.indexOf(v);
    if (i >= 0 && v !== "") return f.values[i - (f.options[0] === "" ? 1 : 0)];
    return f.count && /^\d+$/.test(v) ? Number(v) : v;
  }
  return /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v) ? Number(v) : v;
}

function isDefault(f, v) {
  if (f.type === "fixes") return v.length === 0;
  return v === f.def || (f.type !== "checkbox" && v === "");
}

function put(obj, path, v) {
  const keys = path.split(".");
  let o = obj;
  for (const k of keys.slice(0, -1)) o = o[k] = o[k] || {};
  o[keys[keys.length - 1]] = v;
}

// The manifest the controls describe, or an error for a control the page
// itself reads (the pasted config.json).
function manifest(s) {
  const m = { apiVersion: "memfloor.dev/v1", kind: "Job", metadata: {}, spec: {} };
  if (s.source === "model") {
    put(m, "spec.model.name", $("model").value);
  } else if (s.source === "config") {
    let cfg;
    try {
      cfg = JSON.parse($("config").value);
    } catch (e) {
      return { error: { field: "spec.model.config",
        error: "spec.model.config: not JSON (" + e.message + ")" } };
    }
    put(m, "spec.model.config", cfg);
  }
  put(m, "metadata.name", s.name || FIELDS[0].def); // required
  for (const f of FIELDS) {
    if (!applies(f, s) || f.q === "name") continue;
    const v = s[f.q];
    if (isDefault(f, v) && !(f.keep && v !== "")) continue;
    put(m, f.path, typed(f, v));
  }
  if (Object.keys(m.spec).length === 0) delete m.spec;
  return { manifest: m };
}

// The link that reproduces the view.
function link(s) {
  const p = new URLSearchParams();
  if (s.source === "model") p.set("model", $("model").value);
  else if (s.source === "config") p.set("config", $("config").value);
  else if (s.source === "manifest") p.set("manifest", $("manifest").value);
  if (s.estimator) p.set("estimator", s.estimator);
  for (const f of FIELDS) {
    if (!applies(f, s)) continue;
    const v = s[f.q];
    if (isDefault(f, v) && !(f.keep && v !== "")) continue;
    p.set(f.q, f.type === "fixes" ? v.join(",") : String(v));
  }
  const q = p.toString().replace(/%2F/g, "/").replace(/%2C/g, ",");
  return location.origin + location.pathname + (q ? "?" + q : "");
}

function readLink() {
  const p = new URLSearchParams(location.search);
  let src = "model";
  if (p.has("config")) src = "config";
  else if (p.has("manifest")) src = "manifest";
  else if (!p.has("model") && p.has("minMemory")) src = "floor";
  document.querySelector("input[name=source][value=" + src + "]").checked = true;
  if (p.has("config")) $("config").value = p.get("config");
  if (p.has("manifest")) $("manifest").value = p.get("manifest");
  const est = p.get("estimator") || "";
  if (est && ![...$("estimator").options].some((o) => o.value === est))
    $("estimator").append(el("option", { value: est, text: est }));
  $("estimator").value = est;
  for (const f of FIELDS) setControl(f, p.has(f.q) ? p.get(f.q) : f.def);
  return p.get("model") || DEFAULT_MODEL;
}

function showApplicable() {
  const s = state();
  for (const f of FIELDS) {
    if (f.type === "fixes") continue;
    $("w-" + controlId(f)).hidden = !applies(f, s);
    if (f.type === "select" && Object.keys(f.valueWhen).length) {
      const a = available(f, s);
      for (const o of controls[f.q].options) o.hidden = !a.includes(o.value);
    }
  }
  $("w-model").hidden = s.source !== "model";
  $("w-config").hidden = s.source !== "config";
  $("w-manifest").hidden = s.source !== "manifest";
  $("group-workload").hidden = s.source === "manifest" || s.source === "floor";
  $("group-resources").hidden = s.source === "manifest";
  $("group-fixes").hidden = s.source === "manifest";
}

// --- talking to the API ----------------------------------------------

async function call(method, path, body, ctype) {
  const opt = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    opt.body = body;
    opt.headers["Content-Type"] = ctype;
  }
  let resp;
  try {
    resp = await fetch(path, opt);
  } catch (e) {
    return { status: 0, json: { error: "memfloord did not answer: " + e.message } };
  }
  let json = null;
  try {
    json = await resp.json();
  } catch (e) {
    json = { error: "answer " + resp.status + " is not JSON" };
  }
  return { status: resp.status, json };
}

function query(estimator) {
  return estimator ? "?estimator=" + encodeURIComponent(estimator) : "";
}

// The estimator the main estimate used, and so the other one to ask.
function otherEstimator(main, chosen) {
  const used = (main && main.estimator) || chosen || ESTIMATORS[0];
  return ESTIMATORS.find((e) => e !== used);
}

// The job as placed: the manifest sent with the fields the applied fixes
// set (the decision's placement.manifestChange), so that the other
// estimator is asked about the job the need is of; null when that cannot
// be made here (a manifest pasted as YAML, which the page does not read).
function placedBody(body, ctype, d) {
  const change = (d && d.placement && d.placement.manifestChange) || {};
  if (!Object.keys(change).length) return body;
  if (ctype !== "application/json") return null;
  const m = JSON.parse(body);
  for (const [path, v] of Object.entries(change)) {
    const keys = path.split(".");
    let o = m;
    for (const k of keys.slice(0, -1)) {
      if (typeof o[k] !== "object" || o[k] === null) o[k] = {};
      o = o[k];
    }
    o[keys[keys.length - 1]] = v;
  }
  return JSON.stringify(m);
}

async function update() {
  const gen = ++generation;
  document.body.dataset.state = "busy";
  const s = state();
  history.replaceState(null, "", link(s));
  $("link").href = link(s);
  $("link").textContent = link(s);
  clearErrors();
  let body, ctype, shown, shownType = "application/yaml";
  if (s.source === "manifest") {
    body = $("manifest").value;
    ctype = /^\s*\{/.test(body) ? "application/json" : "application/yaml";
    shown = body;
    shownType = ctype;
  } else {
    const b = manifest(s);
    if (b.error) {
      showError(b.error, s);
      renderEmpty();
      document.body.dataset.state = timer ? "pending" : "ready";
      return;
    }
    body = JSON.stringify(b.manifest);
    ctype = "application/json";
    shown = yaml(b.manifest);
  }
  $("yaml").textContent = shown;
  const file = shownType === "application/json" ? "job.json" : "job.yaml";
  $("curl").textContent = "curl --data-binary @" + file + " -H 'Content-Type: " +
    shownType + "' " + location.origin + "/v1/admit";
  $("results").setAttribute("aria-busy", "true");
  const withModel = s.source !== "floor";
  const [admit, est, cat, calib] = await Promise.all([
    call("POST", "/v1/admit" + query(s.estimator), body, ctype),
    withModel ? call("POST", "/v1/estimate" + query(s.estimator), body, ctype)
      : null,
    call("GET", "/v1/catalog"),
    call("GET", "/v1/calibration"),
  ]);
  let other = null;
  const placed = (admit.status === 200 || admit.status === 403) &&
    placedBody(body, ctype, admit.json);
  if (est && est.status === 200 && placed) {
    const name = otherEstimator(est.json, s.estimator);
    other = { name, asPlaced: placed !== body,
      answer: await call("POST", "/v1/estimate" + query(name), placed, ctype) };
  }
  if (gen !== generation) return;
  $("results").removeAttribute("aria-busy");
  try {
    renderCalibration(calib);
    show(s, admit, est, cat, other);
  } finally {
    document.body.dataset.state = timer ? "pending" : "ready";
  }
}

// Put the answers on the page.
function show(s, admit, est, cat, other) {
  if (cat.status === 200) renderCatalog(cat.json, admit.json);
  if (admit.status !== 200 && admit.status !== 403) {
    showError(admit.json, s);
    renderEmpty();
    return;
  }
  if (est && est.status !== 200 && admit.json.need && admit.json.need.source === "model")
    showError(est.json, s);
  render(admit.json, est && est.status === 200 ? est.json : null, other, s);
}

function schedule(delay) {
  document.body.dataset.state = "pending";
  clearTimeout(timer);
  timer = setTimeout(() => { timer = 0; update(); }, delay);
}

// --- errors next to the field they name ------------------------------

function clearErrors() {
  for (const e of document.querySelectorAll(".err")) e.textContent = "";
  for (const e of document.querySelectorAll("[aria-invalid]"))
    e.removeAttribute("aria-invalid");
  $("general-error").hidden = true;
}

function fieldFor(path, s) {
  if (!path) return null;
  if (s.source === "manifest") return "manifest";
  if (path === "spec.model" || path.startsWith("spec.model.config"))
    return s.source === "config" ? "config" : "model";
  if (path.startsWith("spec.model")) return "model";
  // The control of the field or of the nearest field above it; for an
  // object of its own (spec.workload.lora), its first control.
  let best = null;
  for (const f of FIELDS) {
    if (path === f.path || path.startsWith(f.path + ".") ||
        path.startsWith(f.path + "["))
      if (!best || f.path.length > best.path.length) best = f;
  }
  if (!best && path.split(".").length >= 3)
    best = FIELDS.find((f) => f.path.startsWith(path + "."));
  return best ? controlId(best) : null;
}

function showError(e, s) {
  const text = (e && e.error) || "unexpected answer";
  const where = e && e.line ? " (line " + e.line + ", column " + e.column + ")" : "";
  const id = fieldFor(e && e.field, s);
  const box = id ? $("err-" + id) : null;
  if (box && !$("w-" + id).hidden) {
    box.textContent = text + (text.includes("line ") ? "" : where);
    const c = $(id);
    if (c) c.setAttribute("aria-invalid", "true");
    return;
  }
  $("general-error").hidden = false;
  $("general-error").textContent = text + where;
}

// --- rendering -------------------------------------------------------

function renderEmpty() {
  for (const id of ["verdict", "need", "chart", "placement", "rejection", "warnings"])
    $(id).replaceChildren();
  $("verdict").append(figure("admitted", "", "—"));
}

function render(d, est, other, s) {
  renderVerdict(d);
  renderNeed(d, est, other);
  renderChart(est);
  renderPlacement(d);
  renderRejection(d, s);
  $("warnings").replaceChildren(...(d.warnings || []).map((w) => el("li", { text: w })));
}

function renderVerdict(d) {
  const v = $("verdict");
  v.replaceChildren(
    el("span", { class: "badge " + (d.admitted ? "yes" : "no") },
      figure("admitted", d.admitted ? "yes" : "no",
        d.admitted ? "yes" : "no")),
    el("span", { class: "verdict-text" },
      d.admitted ? " admitted: " : " rejected: ",
      figure("job", d.job)));
  if (!d.admitted)
    v.append(el("p", { class: "reason" }, figure("reason", d.reason)));
}

function renderNeed(d, est, other) {
  const n = $("need");
  const need = d.need || {};
  const rows = [];
  if (need.source === "minMemory") {
    rows.push(["Need", el("span", {}, "a floor was written (",
      figure("perGpuBytes", null, "no estimate"), "): any card with ",
      figure("minMemoryBytes", need.minMemoryBytes, gb(need.minMemoryBytes)),
      " of memory fits")]);
  } else {
    rows.push(["Per-GPU need", figure("perGpuBytes", need.perGpuBytes, gb(need.perGpuBytes))]);
  }
  rows.push(["minMemory", figure("minMemory", d.minMemory)]);
  if (est) {
    rows.push(["Estimator", figure("estimator", est.estimator || "default",
      est.estimator || "the daemon's default")]);
    if (est.parameters !== undefined)
      rows.push(["Parameters", figure("parameters", est.parameters,
        est.parameters.toLocaleString("en-US") +
        (est.trainableParameters > 0 && est.trainableParameters !== est.parameters
          ? " (" + est.trainableParameters.toLocaleString("en-US") + " trained)" : ""))]);
  }
  // The other estimator's need for the same job: as placed when
  // admission applied fixes (then so labelled), else as written.
  if (other && other.answer.status === 200 && need.source === "model" &&
      other.answer.json.estimator === other.name &&
      other.answer.json.perGpuBytes !== need.perGpuBytes) {
    rows.push(["With " + other.name + (other.asPlaced ? ", as placed" : ""),
      el("span", {},
        figure("other-perGpuBytes", other.answer.json.perGpuBytes,
          gb(other.answer.json.perGpuBytes)),
        " per GPU, minMemory ", figure("other-minMemory", other.answer.json.minMemory))]);
  }
  const p = d.placement;
  if (p && p.fixes && p.fixes.length)
    rows.push(["As placed", el("span", {}, "admission applied ",
      el("code", { text: p.fixes.join(", ") }),
      "; the need above is the job as placed, the chart the job as written")]);
  n.replaceChildren(el("dl", {}, ...rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)])));
}

// The buckets as bars, each with its formula below it (HTML, so a long
// formula wraps; a bar's width is set through the CSSOM, which the
// Content-Security-Policy allows).
function renderChart(est) {
  const box = $("chart");
  box.replaceChildren();
  if (!est || !est.buckets) return;
  const max = Math.max(...est.buckets.map((b) => b.bytes), 1);
  const c = el("div", { class: "chart", role: "group",
    "aria-label": "Memory by bucket, " + gb(est.totalBytes) + " in all" });
  for (const b of est.buckets) {
    const name = el("span", { class: "name", text: b.name });
    // A job over several GPUs: what one GPU of the largest stage holds.
    if (b.perGpuBytes !== undefined && b.perGpuBytes !== b.bytes)
      name.append(el("span", { class: "per-gpu", text: " · " }),
        el("span", { class: "per-gpu", "data-mf": "perGpu-" + b.name,
          "data-value": String(b.perGpuBytes), text: gb(b.perGpuBytes) + " per GPU" }));
    const bar = el("div", { class: "bar" });
    bar.style.width = (100 * b.bytes / max).toFixed(2) + "%";
    c.append(el("div", { class: "bucket bucket-" + b.name },
      el("div", { class: "head" }, name,
        el("span", { class: "gb", "data-mf": "bucket-" + b.name,
          "data-value": String(b.bytes), text: gb(b.bytes) })),
      el("div", { class: "track" }, bar),
      el("div", { class: "formula", text: b.formula || "" })));
  }
  c.append(el("div", { class: "head total" }, el("span", { class: "name", text: "total" }),
    el("span", { class: "gb", "data-mf": "totalBytes", "data-value": String(est.totalBytes),
      text: gb(est.totalBytes) + (est.perGpuBytes !== est.totalBytes
        ? ", " + gb(est.perGpuBytes) + " per GPU" : "") })));
  box.append(c);
}

// A table; on a phone its rows stack, each cell named by its column
// (data-label, shown by the style sheet).
function table(head, rows) {
  for (const r of rows)
    if (r.cells.length === head.cols.length)
      [...r.cells].forEach((c, i) => { if (head.cols[i]) c.dataset.label = head.cols[i]; });
  return el("div", { class: "scroll", tabindex: "0", role: "region",
    "aria-label": head.caption },
  el("table", { class: "stack" }, el("caption", { text: head.caption }),
    el("thead", {}, el("tr", {}, ...head.cols.map((c) => el("th", { scope: "col", text: c })))),
    el("tbody", {}, ...rows)));
}

// A placement's cells; MARK names the chosen one's figures (data-mf),
// SPEED adds its modelled tokens a second and bound (design 21) beside the
// hours, and SERVING an inference job's maxConcurrency and
// maxContextLength.
function placementCells(p, mark, serving, speed) {
  const fig = (name, v, text) => (mark ? figure(name, v, text) : text);
  return [
    el("td", {}, fig("placement-gpu", p.gpu, p.gpu)),
    el("td", { class: "n" }, fig("placement-count", p.count, String(p.count))),
    el("td", { class: "n", text: pct(p.spareFraction) }),
    el("td", { class: "n", text: money(p.hourlyPrice) }),
    el("td", { class: "n", text: num(p.hours, 1) }),
    speed ? el("td", { class: "n" }, fig("placement-tokensPerSecond",
      p.tokensPerSecond, whole(Math.round(p.tokensPerSecond)))) : null,
    speed ? el("td", {}, fig("placement-bound", p.bound, p.bound)) : null,
    el("td", { class: "n" }, fig("placement-cost", p.cost, money(p.cost))),
    el("td", { class: "n", text: num(p.costPerReferenceHour, 3) }),
    serving ? el("td", { class: "n" }, fig("maxConcurrency", p.maxConcurrency,
      whole(p.maxConcurrency))) : null,
    serving ? el("td", { class: "n" }, fig("maxContextLength",
      p.maxContextLength, whole(p.maxContextLength))) : null,
    el("td", { text: p.fixes && p.fixes.length ? p.fixes.join(", ") : "—" }),
  ].filter((c) => c !== null);
}

function renderPlacement(d) {
  const box = $("placement");
  box.replaceChildren();
  if (!d.placement) {
    box.append(el("p", { text: "No card in the catalogue holds the job as written: see the fixes." }));
    return;
  }
  const serving = d.placement.maxConcurrency !== undefined;
  const speed = d.placement.tokensPerSecond !== undefined;
  const rows = [el("tr", { class: "placed" },
    ...placementCells(d.placement, true, serving, speed))];
  for (const a of d.alternatives || [])
    rows.push(el("tr", {}, ...placementCells(a, false, serving, speed)));
  box.append(table({ caption: "Placement (first row) and the best on each other card",
    cols: ["Card", "Count", "Spare", "$/hour", "Hours",
      ...(speed ? ["Tokens/s", "Bound"] : []), "Cost", "$/ref-h",
      ...(serving ? ["Max sequences", "Max context"] : []), "Fixes applied"] }, rows));
}

function changeText(mc) {
  return Object.entries(mc || {}).map(([k, v]) => k + ": " + JSON.stringify(v)).join("\n");
}

// Set the controls a fix's manifestChange names; false when one has none.
function applyFix(mc) {
  const todo = [];
  for (const [path, v] of Object.entries(mc)) {
    const f = FIELDS.find((x) => x.path === path);
    if (!f) return false;
    todo.push([f, typeof v === "boolean" ? v : String(v)]);
  }
  for (const [f, v] of todo) setControl(f, v);
  showApplicable();
  schedule(0);
  return true;
}

function renderRejection(d, s) {
  const box = $("rejection");
  box.replaceChildren();
  if (d.admitted) return;
  if (d.limit) box.append(el("p", {}, "Limit: ", figure("limit", d.limit)));
  if (!d.fixes || !d.fixes.length) return;
  box.append(el("p", {}, "Suggested fix: ",
    el("strong", {}, figure("suggested", d.suggested || "", d.suggested || "none fits"))));
  const rows = d.fixes.map((f) => {
    const p = f.placement;
    const sug = f.fix === d.suggested;
    const canApply = s.source !== "manifest" &&
      Object.keys(f.manifestChange || {}).every((k) => FIELDS.some((x) => x.path === k));
    const apply = canApply ? el("button", { type: "button", class: "apply",
      text: "Apply", "aria-label": "Apply " + f.fix }) : null;
    if (apply) apply.addEventListener("click", () => applyFix(f.manifestChange));
    const main = el("tr", { class: sug ? "suggested" : null, "data-fix": f.fix },
      el("th", { scope: "row", class: "fixname" }, f.fix,
        sug ? el("span", { class: "badge yes", text: "suggested" }) : null,
        f.modellingDecision ? el("span", { class: "badge md", text: "modelling decision" }) : null,
        el("span", { class: "includes hint", text: (f.fixes || []).join(" + ") })),
      el("td", { class: "n", text: gb(f.needBytes) }),
      el("td", { text: f.minMemory }),
      el("td", { text: p ? p.gpu + " × " + p.count : "none fits" }),
      el("td", { class: "n", text: p ? money(p.hourlyPrice) : "—" }),
      el("td", { class: "n", text: p ? num(p.hours, 1) : "—" }),
      el("td", { class: "n", text: p ? money(p.cost) : "—" }),
      el("td", {}, apply));
    const change = el("tr", { class: "change" + (sug ? " suggested" : "") },
      el("td", { colspan: "8" },
        el("div", { class: "changes" },
          el("div", {}, el("span", { class: "hint", text: "manifest" }),
            el("pre", { "data-part": "manifest", text: changeText(f.manifestChange) })),
          el("div", {}, el("span", { class: "hint", text: "code" }),
            el("pre", { "data-part": "code", text: (f.codeChange || []).join("\n") })))));
    return [main, change];
  }).flat();
  box.append(table({ caption: "Fixes, in the order they are tried",
    cols: ["Fix", "Need", "minMemory", "Card", "$/hour", "Hours", "Cost", ""] }, rows));
}

function renderCatalog(c, d) {
  const placed = d && d.placement ? d.placement.gpu : null;
  $("catalog-meta").replaceChildren(
    "version ", figure("catalog-version", c.version), ", loaded ",
    figure("catalog-loadedAt", c.loadedAt), " from ", el("code", { text: c.source || "" }),
    "; headroom " + pct(c.headroom) + ", multi-GPU efficiency " + c.multiGpuEfficiency +
    (c.estimator ? ", estimator " + c.estimator : ""));
  const tf = Object.entries(c.timeFactors || {}).filter(([, v]) => v !== 1)
    .map(([k, v]) => k + " ×" + v).join(", ");
  $("catalog-factors").textContent = tf ? "Run-time factors of fixes: " + tf : "";
  const rows = (c.gpus || []).map((g) => el("tr", { class: g.name === placed ? "placed" : null },
    el("th", { scope: "row", text: g.name }),
    el("td", { class: "n", text: g.memory }),
    el("td", { class: "n", text: gb(g.usableBytes) }),
    el("td", { class: "n", text: money(g.hourlyPrice) }),
    el("td", { class: "n", text: String(g.relativeThroughput) }),
    el("td", { class: "n", text: String(g.maxCount) }),
    el("td", { class: "n", text: num(g.costPerReferenceHour, 3) }),
    el("td", { class: "labels", text: Object.entries(g.labels || {}).map(([k, v]) => k + "=" + v).join("\n") })));
  $("catalog").replaceChildren(table({ caption: "GPUs in service",
    cols: ["Card", "Memory", "Usable", "$/GPU-hour", "Throughput", "Max count", "$/ref-h", "Node labels"] }, rows));
}

// An error figure of a group (median or worst), named for tests.
function calibCell(name, f, key) {
  const v = f ? f[key] : null;
  return el("td", { class: "n" }, figure(name, v, signed(v)));
}

// Design 23's calibration: a row a recipe and card, with the count and
// the median and worst error of memory and speed.  Without --store the
// daemon keeps none (404), which the section says.
function renderCalibration(r) {
  const box = $("calibration");
  if (r.status === 404) {
    box.replaceChildren(el("p", { text: "memfloord keeps no observations (no --store)." }));
    return;
  }
  if (r.status !== 200) {
    box.replaceChildren(el("p", { class: "err", text: "GET /v1/calibration: " +
      ((r.json && r.json.error) || "answer " + r.status) }));
    return;
  }
  const groups = r.json.groups || [];
  if (!groups.length) {
    box.replaceChildren(el("p", { text: "No observations yet." }));
    return;
  }
  const rows = groups.map((g) => el("tr", { "data-mf": "calibration-group",
    "data-card": g.card, "data-method": g.method },
  el("td", { text: g.method || "—" }),
  el("td", { text: g.precision || "—" }),
  el("td", { text: g.gradientCheckpointing || "—" }),
  el("td", { text: g.framework || "—" }),
  el("th", { scope: "row", text: g.card }),
  el("td", { class: "n" }, figure("calibration-count", g.count, whole(g.count))),
  calibCell("calibration-memory-median", g.memory, "median"),
  calibCell("calibration-memory-worst", g.memory, "worst"),
  calibCell("calibration-speed-median", g.speed, "median"),
  calibCell("calibration-speed-worst", g.speed, "worst")));
  box.replaceChildren(table({ caption: "Estimator error by recipe and card",
    cols: ["Method", "Precision", "Checkpointing", "Framework", "Card", "Runs",
      "Memory median", "Memory worst", "Speed median", "Speed worst"] }, rows));
}

// --- YAML for the copyable manifest ----------------------------------

function scalar(v) {
  if (typeof v === "string") {
    const plain = /^[A-Za-z_/][A-Za-z0-9_./-]*$/.test(v) &&
      !/^(true|false|yes|no|on|off|null|y|n|~)$/i.test(v);
    return plain ? v : JSON.stringify(v);
  }
  if (v === null) return "null";
  return String(v);
}

function yaml(v, indent) {
  const pad = "  ".repeat(indent || 0);
  let out = "";
  for (const [k, x] of Object.entries(v)) {
    const key = scalar(k);
    if (Array.isArray(x)) {
      if (x.every((e) => e === null || typeof e !== "object"))
        out += pad + key + ": [" + x.map(scalar).join(", ") + "]\n";
      else
        out += pad + key + ":\n" + x.map((e) => pad + "  -\n" + yaml(e, indent + 2)).join("");
    } else if (x !== null && typeof x === "object") {
      out += pad + key + (Object.keys(x).length ? ":\n" + yaml(x, (indent || 0) + 1) : ": {}\n");
    } else {
      out += pad + key + ": " + scalar(x) + "\n";
    }
  }
  return out;
}

async function copy(node, button) {
  const text = node.href || node.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch (e) {
    const r = document.createRange();
    r.selectNodeContents(node);
    getSelection().removeAllRanges();
    getSelection().addRange(r);
    button.textContent = "Selected: press Ctrl+C";
  }
  setTimeout(() => { button.textContent = button.dataset.label; }, 2000);
}

// --- start -----------------------------------------------------------

async function start() {
  const schema = await call("GET", "/v1/schema");
  if (schema.status !== 200) {
    $("general-error").hidden = false;
    $("general-error").textContent = "GET /v1/schema: " +
      ((schema.json && schema.json.error) || "answer " + schema.status);
    return;
  }
  buildFields(schema.json);
  buildForm();
  const wanted = readLink();
  const models = await call("GET", "/v1/models");
  const sel = $("model");
  const list = models.status === 200 ? models.json.models : [];
  for (const m of list)
    sel.append(el("option", { value: m.name,
      text: m.name + " (" + (m.parameters / 1e9).toFixed(1) + "B)" }));
  if (!list.some((m) => m.name === wanted))
    sel.append(el("option", { value: wanted, text: wanted }));
  sel.value = wanted;
  if (models.status !== 200) showError(models.json, state());
  showApplicable();
  const form = $("job");
  form.addEventListener("input", (e) => {
    showApplicable();
    schedule(e.target.tagName === "TEXTAREA" || e.target.type === "text" ? 300 : 0);
  });
  form.addEventListener("change", (e) => {
    // A manifest to edit starts as the one the controls built.
    if (e.target.name === "source" && e.target.value === "manifest" &&
        !$("manifest").value.trim())
      $("manifest").value = $("yaml").textContent;
    showApplicable();
    schedule(0);
  });
  form.addEventListener("submit", (e) => { e.preventDefault(); schedule(0); });
  for (const b of document.querySelectorAll("button[data-label]")) {
    b.addEventListener("click", () => copy(b.id === "copy-link" ? $("link") : $("yaml"), b));
  }
  await update();
}

document.addEventListener("DOMContentLoaded", start);
