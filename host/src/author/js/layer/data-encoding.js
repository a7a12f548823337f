// ---------------------------------------------------------------- k6/data, k6/encoding

// A SharedArray's function runs once, in describe(): its records go to the host
// (`shared-data.publish`), which keeps one copy for the run, as it keeps `[data]` sets;
// each VU reads a record through `vu.data-get` when it is indexed, parsed from JSON on
// each access as k6 does, so no VU holds the array. A SharedArray the host did not get
// (made outside the init code) is computed in the VU, as before.
const SHARED_PREFIX = 'k6/data:';

function sharedRecords(name, fn) {
  const data = fn();
  if (!Array.isArray(data)) throw new Error(`SharedArray ${name}: the function must return an array`);
  return data;
}

function sharedView(key, n) {
  const at = (i) => JSON.parse(hostVu.dataGet(key, i));
  const index = (p) => (typeof p === 'string' && /^(0|[1-9][0-9]*)$/.test(p) && Number(p) < n ? Number(p) : -1);
  // The target is a plain extensible object: a frozen array's own `length` (0) would bind
  // the proxy by the language's invariants.
  return new Proxy({}, {
    get(target, p) {
      if (p === 'length') return n;
      const i = index(p);
      if (i >= 0) return at(i);
      if (p === Symbol.iterator) return function* iterate() { for (let j = 0; j < n; j++) yield at(j); };
      const method = Array.prototype[p];
      if (typeof method === 'function') return (...args) => method.apply(Array.from({ length: n }, (_, j) => at(j)), args);
      return target[p];
    },
    has(target, p) { return index(p) >= 0 || p in target; },
    ownKeys() { return [...Array.from({ length: n }, (_, j) => String(j)), 'length']; },
    getOwnPropertyDescriptor(target, p) {
      if (p === 'length') return { value: n, writable: false, enumerable: false, configurable: true };
      const i = index(p);
      return i >= 0 ? { value: at(i), writable: false, enumerable: true, configurable: true } : undefined;
    },
    set() { throw new TypeError('a SharedArray is read-only'); },
    defineProperty() { throw new TypeError('a SharedArray is read-only'); },
    deleteProperty() { throw new TypeError('a SharedArray is read-only'); },
  });
}

class SharedArray {
  constructor(name, fn) {
    if (typeof fn !== 'function') throw new Error('SharedArray needs a function that returns an array');
    const key = SHARED_PREFIX + String(name);
    if (phase === 'describe') {
      const data = sharedRecords(name, fn);
      try {
        hostShared.publish(key, data.map((r) => JSON.stringify(r === undefined ? null : r)));
      } catch (e) {
        if (String(e).indexOf('already exists') < 0) throw new Error(`SharedArray ${name}: ${e}`);
      }
      return Object.freeze(data);
    }
    const n = hostVu.dataLen(key);
    if (n === null || n === undefined) return Object.freeze(sharedRecords(name, fn));
    return sharedView(key, Number(n));
  }
}

