// ---------------------------------------------------------------- the bundle

let phase = 'describe';
// phase === 'iteration', kept beside it for the request path: a boolean is tested
// without the string comparison (QuickJS compares equal strings byte by byte).
let iterating = false;
// Enters phase `p`, `iterating` with it: the one place both are set, so they agree.
function enterPhase(p) { phase = p; iterating = p === 'iteration'; }
let loaded = null; // the entry module's exports, once the init code has run
let setupData = null;
// The script's options the layer itself applies (discardResponseBodies, throw,
// minIterationDuration), read once its init code has run.
let runOptions = {};
// Whether the script's init code is running (k6: gRPC's `load` only there, `connect`
// never; fs.open and csv only there).
let inInitCode = false;

// Set at the top level, so in the build's snapshot, not by each VU's `load`: a VU that
// assigned them wrote the snapshot's Math object and added `open` to the global object
// (its shape and property array, a dictionary object's: pages every VU then copied;
// results/js.md, "The k6 layer's per-VU writes"). Before any of the script's code,
// whose init code may draw random numbers too. Math.random is seeded on its first draw,
// not here: seeding reads the clocks and the VU's info, which made about 20 of the
// snapshot's pages private in every VU (measured with bench/js/vumem.py), and an idle
// script never draws.
Math.random = lazyRandom;
globalThis.open = (path, mode) => {
  const f = BUNDLE.files[path];
  if (f === undefined) throw new Error(`open(${JSON.stringify(path)}): not bundled by host build`);
  return mode === 'b' ? b64decodeBytes(f.b64).buffer : f.text;
};

function load() {
  if (loaded) return loaded;
  const cache = {};
  const require = (id) => {
    if (cache[id]) return cache[id];
    const k6m = k6Module(id);
    if (k6m !== undefined) return (cache[id] = k6m);
    const fn = BUNDLE.modules[id];
    if (!fn) throw new Error(`module ${id} is not in the bundle`);
    const exports = {};
    cache[id] = exports;
    const returned = fn(require, exports);
    // A module with top-level `await` returned its body's promise: its jobs run now,
    // so that its importer reads its exports once it finished, as an ES module waits.
    if (returned instanceof LayerPromise) settleModule(returned, id);
    return exports;
  };
  inInitCode = true;
  try {
    loaded = require(BUNDLE.entry);
    settleInit();
  } finally {
    inInitCode = false;
  }
  runOptions = loaded.options || {};
  return loaded;
}

// "at f (file:LINE:COL)" of the combined module → the user's file, line and column
// (through the columns the build's rewrite moved, BUNDLE.cols, and the file's own
// source map, BUNDLE.maps, when it has one); frames of this layer are left out.
function mapStack(stack) {
  const out = [];
  for (const frame of String(stack || '').split('\n')) {
    if (!frame.trim()) continue;
    let layer = false;
    const mapped = frame.replace(/\(([^()]*?):(\d+)(?::(\d+))?\)/, (all, file, line, col) => {
      const n = Number(line);
      let best = null;
      for (const m of BUNDLE.lines) if (m.start <= n) best = m;
      if (!best) { layer = true; return all; }
      const mline = n - best.start + 1;
      if (!col) return `(${best.file}:${mline})`;
      const col0 = movedColumn(BUNDLE.cols[best.file], mline, Number(col) - 1);
      const orig = BUNDLE.maps[best.file] ? mapped0(best.file, mline - 1, col0) : null;
      if (orig) return `(${orig})`;
      return `(${best.file}:${mline}:${col0 + 1})`;
    });
    if (!layer) out.push(mapped);
  }
  return out.join('\n');
}

// The file's 0-based column for column `col` (0-based) of the rewritten `line`: the
// anchors are [from, to, fixed] triples (colmap.rs); a fixed one covers text the
// build wrote, which maps to where it was written.
function movedColumn(cols, line, col) {
  const list = cols && cols[line];
  if (!list) return col;
  let i = 0;
  while (i < list.length && list[i] <= col) i += 3;
  if (i === 0) return col;
  const [f, o, fixed] = [list[i - 3], list[i - 2], list[i - 1]];
  if (fixed) return o;
  const mapped = o + (col - f);
  return i < list.length ? Math.min(mapped, list[i + 1]) : mapped;
}

// A source map's VLQ mappings, decoded on first use: per generated line, a flat list
// of [column, source, line, column].
const decodedMaps = {};
const VLQ = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

function decodeMappings(text) {
  const lines = [];
  let src = 0, oline = 0, ocol = 0;
  for (const row of text.split(';')) {
    const list = [];
    let gcol = 0;
    for (const seg of row.split(',')) {
      if (!seg) continue;
      const v = [];
      let value = 0, shift = 0;
      for (let k = 0; k < seg.length; k++) {
        const d = VLQ.indexOf(seg[k]);
        if (d < 0) return lines;
        value += (d & 31) << shift;
        if (d & 32) { shift += 5; continue; }
        v.push(value & 1 ? -(value >>> 1) : value >>> 1);
        value = 0; shift = 0;
      }
      gcol += v[0];
      if (v.length < 4) continue;
      src += v[1]; oline += v[2]; ocol += v[3];
      list.push(gcol, src, oline, ocol);
    }
    lines.push(list);
  }
  return lines;
}

// "source:LINE:COL" (1-based) of a 0-based position of a bundled file, from its map;
// null when the map says nothing of it.
function mapped0(file, line, col) {
  const map = BUNDLE.maps[file];
  const lines = decodedMaps[file] || (decodedMaps[file] = decodeMappings(map.mappings));
  const list = lines[line];
  if (!list || !list.length) return null;
  let found = -1;
  for (let i = 0; i < list.length; i += 4) {
    if (list[i] <= col) found = i; else break;
  }
  if (found < 0) found = 0;
  const source = map.sources[list[found + 1]];
  if (source === undefined) return null;
  return `${source}:${list[found + 2] + 1}:${list[found + 3] + 1}`;
}

// The last value thrown that is no Error, with the stack where it was thrown: the
// build wraps `throw X` into `throw __k6throw((X))` (throws.rs), as the engine gives
// only an Error a stack and k6 prints any thrown value's. One slot: the value that
// ends a call is the last one thrown (or a rethrow of it).
let lastThrown = null;

function __k6throw(v) {
  let isError = false;
  try { isError = v instanceof Error; } catch (_) { /* a Proxy */ }
  if (!isError) lastThrown = { value: v, stack: new Error().stack };
  return v;
}

// The stack recorded where `e` (no Error) was thrown, mapped; '' when none was.
function thrownStack(e) {
  const t = lastThrown;
  if (!t || !Object.is(t.value, e)) return '';
  lastThrown = null;
  return readSafely(() => mapStack(t.stack), '');
}

function failure(e) {
  let isError = false;
  try { isError = e instanceof Error; } catch (_) { /* a Proxy whose getPrototypeOf throws */ }
  if (isError) {
    const name = readSafely(() => e.name, 'Error');
    const message = readSafely(() => e.message, '(its message throws when read)');
    const stack = readSafely(() => mapStack(e.__k6stack || e.stack), '');
    return stack ? `${name}: ${message}\n${stack}` : `${name}: ${message}`;
  }
  const stack = thrownStack(e);
  return stack ? `uncaught ${format(e)}\n${stack}` : `uncaught ${format(e)}`;
}

function guard(what, fn) {
  try {
    return fn();
  } catch (e) {
    throw failure(e);
  } finally {
    endCall();
  }
}


// QuickJS makes each built-in function and namespace (Math, JSON, Object.keys,
// Array.prototype.map, ...) on its first use. Made here, at the top level, they are in
// the snapshot every VU maps; left lazy, every VU made its own copy of each one its init
// code used (the layer's `load` alone made Math and JSON, their functions and more: a
// fifth of a VU's page faults and pages at start, results/js.md "10,000 VUs starting
// on both cores"). Reading each property's descriptor is enough to make it.
(() => {
  const made = new Set();
  const make = (o) => {
    if (o === null || (typeof o !== 'object' && typeof o !== 'function') || made.has(o)) return;
    made.add(o);
    for (const key of Reflect.ownKeys(o)) Object.getOwnPropertyDescriptor(o, key);
  };
  for (const o of [Object, Function, Array, String, Number, Boolean, Symbol, BigInt, Math, JSON,
    Reflect, Date, RegExp, Map, Set, WeakMap, WeakSet, Error, TypeError, RangeError, SyntaxError,
    ArrayBuffer, DataView, Uint8Array, Int32Array, Float64Array, Promise, LayerPromise]) {
    make(o);
    make(o.prototype);
  }
  // The typed arrays' shared prototype (TypedArray.prototype: subarray, set, ...).
  make(Object.getPrototypeOf(Uint8Array));
  make(Object.getPrototypeOf(Uint8Array.prototype));
  make(globalThis);
})();
