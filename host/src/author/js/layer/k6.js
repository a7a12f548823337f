// ---------------------------------------------------------------- k6

class Abort extends Error {}

// The metrics the init code made, declared to the host from describe(): k6's
// group_duration, and k6/metrics' and the Redis client's as they are made.
const metricsMade = new Map([['group_duration', 'trend']]);

// Checks by number (the layer's `checks` interface): a check's name and tags go to the
// host once, when first seen, and each result after that is one number and a bool.
// The key is the tags as text and the name, so a check under another group, VU tag
// or call tag is another number. Past the host's bound (register gives none) a check
// is recorded by name, as `metrics.check`.
const checkIds = new Map(); // key → number, or -1: recorded by name
const MAX_CHECK_IDS = 10000;
// The keys and numbers of the first CHECK_ORDER checks of the last iteration, by
// their order in it (`checkAt`, reset by each iteration): comparing a key with the
// one seen at the same place costs less than finding it in `checkIds`.
const CHECK_ORDER = 64;
const checkOrderKeys = [];
const checkOrderIds = [];
let checkAt = 0;

function check(val, sets, tags) {
  let all = true;
  let list = null;
  let prefix = groupPath;
  if (vuTagsVersion !== 0) prefix += vuTagsKey();
  if (tags) for (const k in tags) prefix += `\u0003${k}\u0002${tags[k]}`;
  // Object.keys, not for-in: QuickJS's for-in lists the prototype chain's names too.
  const names = sets === null || sets === undefined ? [] : Object.keys(sets);
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const c = sets[name];
    const ok = !!(typeof c === 'function' ? c(val) : c);
    const key = prefix === '' ? name : `${prefix}\u0000${name}`;
    // The n-th check of an iteration is most often the n-th of the last one.
    const at = checkAt++;
    let id;
    if (at < CHECK_ORDER && checkOrderKeys[at] === key) {
      id = checkOrderIds[at];
    } else {
      id = checkIds.get(key);
      if (id === undefined) {
        if (list === null) list = tagList(tags);
        const got = checkIds.size < MAX_CHECK_IDS ? hostChecks.register(name, list) : null;
        id = got === null ? -1 : got;
        checkIds.set(key, id);
      }
      if (at < CHECK_ORDER) { checkOrderKeys[at] = key; checkOrderIds[at] = id; }
    }
    if (id >= 0) hostChecks.add(id, ok);
    else hostMetrics.check(name, ok, list === null ? (list = tagList(tags)) : list);
    if (!ok) all = false;
  }
  return all;
}

function group(name, fn) {
  const outer = groupPath;
  groupPath = `${outer}::${name}`;
  tagsEpoch[0]++;
  const started = Date.now();
  try {
    return fn();
  } finally {
    hostMetrics.add('group_duration', 'trend', Date.now() - started, tagList());
    groupPath = outer;
    tagsEpoch[0]++;
  }
}

function sleep(s) {
  const ms = Math.round(Number(s) * 1000);
  if (ms > 0) hostVu.sleep(ms);
}

function fail(msg) { throw new Error(msg === undefined ? 'fail() called' : String(msg)); }

// Math.random is a xorshift128 of the layer's: QuickJS's own generator was seeded
// once, under Wizer at build time, so its state sat in the snapshot and every VU of
// every run drew the same sequence (a script picking a random user picked the same
// one in each VU). Each instance seeds its own on its first call (`freshRandom`).
const rng = new Uint32Array(4);
function step() {
  // Marsaglia's xorshift128: a period of 2^128 - 1, in 32-bit operations only.
  let t = rng[3];
  const s = rng[0];
  rng[3] = rng[2]; rng[2] = rng[1]; rng[1] = s;
  t ^= t << 11; t ^= t >>> 8;
  rng[0] = t ^ s ^ (s >>> 19);
  return rng[0];
}
// 53 random bits in [0, 1), as Math.random gives.
function nextRandom() { return ((step() >>> 5) * 67108864 + (step() >>> 6)) / 9007199254740992; }
function seedRandom(words) {
  // splitmix32 spreads the seed's words over the four of the state.
  let x = 0x9e3779b9;
  for (let i = 0; i < 4; i++) {
    x = (x + (words[i % words.length] >>> 0) + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    rng[i] = (z ^ (z >>> 16)) >>> 0;
  }
  if (rng[0] === 0 && rng[1] === 0 && rng[2] === 0 && rng[3] === 0) rng[0] = 1;
  Math.random = nextRandom;
}
function freshRandom(vuId) {
  // The wall clock (ms, and the monotonic clock's fraction) and the VU's id: two VUs
  // starting in the same millisecond still differ, and so do two runs.
  const now = Date.now();
  const fine = Math.floor((performance.now() % 1) * 4294967296);
  seedRandom([now >>> 0, Math.floor(now / 4294967296), fine, vuId]);
}

// The instance's first Math.random(): seeds the generator for this instance (the VU's
// id, or 0 in describe and setup), which then replaces it.
function lazyRandom() {
  freshRandom(phase === 'describe' || phase === 'setup' ? 0 : vuInfo().vuId);
  return nextRandom();
}

function randomSeed(n) {
  // A seeded generator replaces Math.random for the VU, as k6's randomSeed does: the
  // same seed gives the same sequence.
  seedRandom([Number(n) >>> 0]);
}

const k6 = { check, group, sleep, fail, randomSeed };

