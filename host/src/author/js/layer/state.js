// ---------------------------------------------------------------- the VU's state

// The VU's numbers of the current call (`k6-layer/vu.numbers`: vu-id, vu-id in the
// scenario, iteration, iteration in the scenario), asked for once per call: one typed
// array, where `vu.info()`'s record is lifted field by field (~9 µs an iteration).
let info = null;
const VU_ID = 0;
const VU_ITERATION = 2;
const VU_ITERATION_IN_SCENARIO = 3;
function vuNumbers() {
  if (info === null) info = hostLayerVu.numbers();
  return info;
}
// vu.info() of the current call (for the scenario's name), asked for once per call:
// a new call has new numbers.
let infoRecord = null;
let infoRecordOf = null;
function vuInfo() {
  const of = vuNumbers();
  if (infoRecordOf !== of) { infoRecord = hostVu.info(); infoRecordOf = of; }
  return infoRecord;
}

let groupPath = ''; // "::a::b" inside group("a", () => group("b", ...))
const vuTags = {}; // exec.vu.tags: added to every sample of the VU
// exec.vu.tags is a view of `vuTags` that counts its changes, so that what is keyed by
// the VU's tags (checks, repeated requests) compares a number, not the tags.
let vuTagsVersion = 0;
// Counted up whenever the VU's tags or the group change, so what is keyed by both
// compares one number: a metric's series for its plain samples (metrics.js), checked
// by this runtime's native `add` too (plugins/js-runtime/src/natives.rs), which reads
// the element where it is, so this array is never replaced.
const tagsEpoch = new Float64Array(1);
// Changes of what a repeated request is matched by beyond its call's arguments
// (exec.vu.tags, setResponseCallback).
let keyVersion = 0;
const vuTagsView = new Proxy(vuTags, {
  set(t, k, v) { t[k] = v; vuTagsVersion++; tagsEpoch[0]++; keyVersion++; return true; },
  deleteProperty(t, k) { const ok = delete t[k]; vuTagsVersion++; tagsEpoch[0]++; keyVersion++; return ok; },
  defineProperty(t, k, d) { Object.defineProperty(t, k, d); vuTagsVersion++; tagsEpoch[0]++; keyVersion++; return true; },
});
let vuTagsText = ''; // the VU's tags as a check's key spells them, as of vuTagsTextVersion
let vuTagsTextVersion = 0;
function vuTagsKey() {
  if (vuTagsTextVersion !== vuTagsVersion) {
    let text = '';
    for (const k in vuTags) text += `\u0001${k}\u0002${vuTags[k]}`;
    vuTagsText = text;
    vuTagsTextVersion = vuTagsVersion;
  }
  return vuTagsText;
}

function tagList(extra) {
  const list = [];
  for (const k in vuTags) list.push([k, String(vuTags[k])]);
  if (groupPath) list.push(['group', groupPath]);
  if (extra) for (const k in extra) list.push([k, String(extra[k])]);
  return list;
}

// The VU's and the group's tags as `tagList()` gives them, remade only when either
// changed: a sample without tags of its own (`counter.add(1)` per WebSocket message)
// then costs no for-in over the VU's tags and no new list. The host only reads it.
let plainTags = null;
let plainTagsVersion = -1;
let plainTagsGroup = '';
function plainTagList() {
  if (plainTags === null || plainTagsVersion !== vuTagsVersion || plainTagsGroup !== groupPath) {
    plainTags = tagList();
    plainTagsVersion = vuTagsVersion;
    plainTagsGroup = groupPath;
  }
  return plainTags;
}

// An import's error variant ({tag, val}): the runtime throws an Error carrying it as
// `payload`; callbacks of the event loop get the variant itself.
function hostError(e) {
  return e instanceof Error && e.payload && typeof e.payload === 'object' && e.payload.tag ? e.payload : e;
}

function format(v) {
  if (typeof v === 'string') return v;
  try {
    if (v instanceof Error) return v.stack ? `${v}\n${v.stack}` : String(v);
    try { const j = JSON.stringify(v); return j === undefined ? String(v) : j; } catch (_) { return String(v); }
  } catch (_) {
    return unreadable(v);
  }
}

// A value of the script's that throws when read (a Proxy's traps, a `stack` or
// `toString` that throws) is still described, by its type alone: reading it again
// outside the script's code ended the VU in a trap ("wasm trap: unreachable").
function unreadable(v) {
  return `[${typeof v} that throws when read]`;
}

// `read()`, or `fallback` when reading throws; a text is made inside the guard, so a
// getter's answer whose own `toString` throws falls back too.
function readSafely(read, fallback) {
  try { const v = read(); return v === undefined || v === null ? fallback : String(v); } catch (_) { return fallback; }
}

const consoleLine = (level) => (...args) => hostVu.log(level, args.map(format).join(' '));
globalThis.console = {
  log: consoleLine('info'), info: consoleLine('info'), warn: consoleLine('warn'),
  error: consoleLine('error'), debug: consoleLine('debug'), trace: consoleLine('trace'),
};

globalThis.__ENV = new Proxy({}, {
  get(_, name) { if (typeof name !== 'string') return undefined; const v = hostVu.env(name); return v === null ? undefined : v; },
  has(_, name) { return typeof name === 'string' && hostVu.env(name) !== null; },
  set() { throw new TypeError('__ENV is read-only here: set variables with -e NAME=VALUE or [env]'); },
});
Object.defineProperty(globalThis, '__VU', { get() { return phase === 'setup' ? 0 : vuNumbers()[VU_ID]; } });
Object.defineProperty(globalThis, '__ITER', { get() { return vuNumbers()[VU_ITERATION]; } });

