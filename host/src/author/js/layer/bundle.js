// ---------------------------------------------------------------- the bundle

let phase = 'describe';
let loaded = null; // the entry module's exports, once the init code has run
let setupData = null;

function load() {
  if (loaded) return loaded;
  // Before any of the script's code: its init code may draw random numbers too.
  // Math.random is seeded on its first draw, not here: seeding reads the clocks and the
  // VU's info, which made about 20 of the snapshot's pages private in every VU (measured
  // with bench/js/vumem.py), and an idle script never draws.
  Math.random = lazyRandom;
  const cache = {};
  const files = BUNDLE.files;
  globalThis.open = (path, mode) => {
    const f = files[path];
    if (f === undefined) throw new Error(`open(${JSON.stringify(path)}): not bundled by host build`);
    return mode === 'b' ? b64decodeBytes(f.b64).buffer : f.text;
  };
  const require = (id) => {
    if (MODULES[id]) return MODULES[id];
    if (cache[id]) return cache[id];
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

// "at f (file:LINE:COL)" of the combined module → the user's file and line; frames
// of this layer are left out.
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
      return `(${best.file}:${n - best.start + 1}${col ? ':' + col : ''})`;
    });
    if (!layer) out.push(mapped);
  }
  return out.join('\n');
}

function failure(e) {
  let isError = false;
  try { isError = e instanceof Error; } catch (_) { /* a Proxy whose getPrototypeOf throws */ }
  if (isError) {
    const name = readSafely(() => e.name, 'Error');
    const message = readSafely(() => e.message, '(its message throws when read)');
    const stack = readSafely(() => mapStack(e.stack), '');
    return stack ? `${name}: ${message}\n${stack}` : `${name}: ${message}`;
  }
  return `uncaught ${format(e)}`;
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

