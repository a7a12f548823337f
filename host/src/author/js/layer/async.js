// ---------------------------------------------------------------- async: the layer's Promise, microtasks, the driver
//
// The runtime runs no promise jobs once a call into the component returns (its
// synchronous export path never drains QuickJS's job queue), so the engine's own
// Promise would never call a `then` callback. The layer has its own: the global
// `Promise` is `LayerPromise`, whose jobs go on the layer's microtask queue, drained at
// the end of every call into the script (init, setup, each iteration, teardown,
// handleSummary) and after every timer and socket callback. `async` functions were
// rewritten at build time into generator functions that `__k6async` drives
// (host/src/author/js/asyncs.rs): each `yield` is an `await`, resumed with the settled
// value of what it yielded. Jobs run in the order the language gives them (a `then`
// on a settled promise: one turn; resolving with a thenable: one more turn to call
// its `then`), so `.then` chains and `Promise.all` interleave as they do in k6.

// Jobs are pairs (function, argument), so queueing one allocates nothing.
const microtasks = [];
let microtaskHead = 0;

// Runs every queued job, and the jobs they queue, until none is left. A job may drain
// too (a socket loop inside `ws.connect` called from a job): it takes up the same queue.
function drainMicrotasks() {
  while (microtaskHead < microtasks.length) {
    const job = microtasks[microtaskHead];
    const arg = microtasks[microtaskHead + 1];
    microtasks[microtaskHead] = undefined;
    microtasks[microtaskHead + 1] = undefined;
    microtaskHead += 2;
    job(arg);
  }
  microtasks.length = 0;
  microtaskHead = 0;
}

// A failed iteration leaves no jobs for the next one.
function resetMicrotasks() {
  microtasks.length = 0;
  microtaskHead = 0;
  unhandledRejections.clear();
  uncaughtErrors.length = 0;
}

const P_PENDING = 0;
const P_FULFILLED = 1;
const P_REJECTED = 2;
// Rejected promises nobody has handled yet (k6 fails the iteration with
// "Uncaught (in promise)" for one left at its end), and errors thrown by
// queueMicrotask callbacks.
const unhandledRejections = new Set();
// Whether a rejection may be unhandled: reading the set's size is a native call per
// settled call, which an iteration that never rejected skips.
let rejectionsSeen = false;
const uncaughtErrors = [];
// Whether the VU ever made a promise, a timer, a socket or a queued job: until then
// no call can have left work to settle, and an iteration skips looking (the sizes
// of the queues, maps and sets cost about 3 k wasm operations per iteration).
let asyncSeen = false;

// A promise's fields: `_reactions` is null until a reaction is added (most promises
// the layer makes get none: an `await` of a settled one, an async function's own), and
// null again once settled. Made as an object literal with its prototype: no call
// (`Object.create` is a native call, which costs the interpreter more than the rest).
function newPromise() {
  asyncSeen = true;
  return { __proto__: PROMISE_PROTO, _state: P_PENDING, _value: undefined, _reactions: null, _handled: false };
}

// A promise fulfilled with `v` already, `v` not a thenable (a reply the host read).
function fulfilledPromise(v) {
  asyncSeen = true;
  return { __proto__: PROMISE_PROTO, _state: P_FULFILLED, _value: v, _reactions: null, _handled: false };
}

function settlePromise(p, state, value) {
  if (p._state !== P_PENDING) return;
  p._state = state;
  p._value = value;
  const reactions = p._reactions;
  p._reactions = null;
  if (state === P_REJECTED && !p._handled) { unhandledRejections.add(p); rejectionsSeen = true; }
  if (reactions === null) return;
  // Indexed, not for-of: an iterator per settle costs the interpreter more.
  for (let i = 0; i < reactions.length; i++) {
    const r = reactions[i];
    r.from = p;
    microtasks.push(runReaction, r);
  }
}

// The language's promise resolve function: a thenable's `then` is called on a later
// turn (PromiseResolveThenableJob), anything else fulfils.
function resolvePromise(p, x) {
  if (p._state !== P_PENDING) return;
  if (x === p) { settlePromise(p, P_REJECTED, new TypeError('Chaining cycle detected for promise')); return; }
  if (x !== null && (typeof x === 'object' || typeof x === 'function')) {
    let then;
    try { then = x.then; } catch (e) { settlePromise(p, P_REJECTED, e); return; }
    if (typeof then === 'function') {
      microtasks.push(resolveThenableJob, { p, x, then });
      return;
    }
  }
  settlePromise(p, P_FULFILLED, x);
}

function resolveThenableJob(job) {
  const [res, rej] = resolvingFunctions(job.p);
  try { job.then.call(job.x, res, rej); } catch (e) { rej(e); }
}

// A resolve/reject pair of which only the first call counts.
function resolvingFunctions(p) {
  let done = false;
  return [
    (v) => { if (!done) { done = true; resolvePromise(p, v); } },
    (e) => { if (!done) { done = true; settlePromise(p, P_REJECTED, e); } },
  ];
}

// `r`: { onOk, onErr, child, from }, or an async function's run (`child` null: the
// driver's own await, resumed by `asyncStep`).
function addReaction(p, r) {
  if (p._state === P_PENDING) {
    if (p._reactions === null) p._reactions = [r]; else p._reactions.push(r);
  } else {
    if (p._state === P_REJECTED && !p._handled) unhandledRejections.delete(p);
    r.from = p;
    microtasks.push(runReaction, r);
  }
  p._handled = true;
}

// The job of reaction `r` to the settled promise `r.from`.
function runReaction(r) {
  const state = r.from._state;
  const value = r.from._value;
  if (r.child === null) { asyncStep(r, state === P_FULFILLED, value, true); return; }
  const fn = state === P_FULFILLED ? r.onOk : r.onErr;
  if (typeof fn !== 'function') {
    if (state === P_FULFILLED) resolvePromise(r.child, value); else settlePromise(r.child, P_REJECTED, value);
    return;
  }
  let out;
  try { out = fn(value); } catch (e) { settlePromise(r.child, P_REJECTED, e); return; }
  resolvePromise(r.child, out);
}

function isLayerPromise(v) { return v instanceof LayerPromise && v.constructor === LayerPromise; }

// Each item of an iterable as a promise (Promise.all and its kin), or a TypeError.
function promiseItems(items, what) {
  if (items === null || items === undefined || typeof items[Symbol.iterator] !== 'function') {
    throw new TypeError(`${what} needs an iterable (an array of promises or values)`);
  }
  return Array.from(items, (x) => LayerPromise.resolve(x));
}

// The global Promise (the engine's own never runs its callbacks here).
class LayerPromise {
  constructor(executor) {
    if (typeof executor !== 'function') throw new TypeError('Promise resolver is not a function');
    asyncSeen = true;
    this._state = P_PENDING; this._value = undefined; this._reactions = null; this._handled = false;
    const [res, rej] = resolvingFunctions(this);
    try { executor(res, rej); } catch (e) { rej(e); }
  }
  then(onOk, onErr) {
    if (this === null || typeof this !== 'object' || this._reactions === undefined) throw new TypeError('Promise.prototype.then called on an object that is not a Promise');
    const child = newPromise();
    addReaction(this, { onOk, onErr, child, from: null });
    return child;
  }
  catch(onErr) { return this.then(undefined, onErr); }
  finally(fn) {
    if (typeof fn !== 'function') return this.then(fn, fn);
    return this.then(
      (v) => LayerPromise.resolve(fn()).then(() => v),
      (e) => LayerPromise.resolve(fn()).then(() => { throw e; }),
    );
  }
  static resolve(v) {
    if (isLayerPromise(v)) return v;
    const p = newPromise();
    resolvePromise(p, v);
    return p;
  }
  static reject(e) {
    const p = newPromise();
    settlePromise(p, P_REJECTED, e);
    return p;
  }
  static withResolvers() {
    const p = newPromise();
    const [resolve, reject] = resolvingFunctions(p);
    return { promise: p, resolve, reject };
  }
  static all(items) {
    return new LayerPromise((resolve, reject) => {
      const list = promiseItems(items, 'Promise.all');
      const values = new Array(list.length);
      let left = list.length;
      if (!left) resolve(values);
      list.forEach((p, i) => p.then((v) => { values[i] = v; if (--left === 0) resolve(values); }, reject));
    });
  }
  static allSettled(items) {
    return new LayerPromise((resolve) => {
      const list = promiseItems(items, 'Promise.allSettled');
      const values = new Array(list.length);
      let left = list.length;
      if (!left) resolve(values);
      const done = (i, v) => { values[i] = v; if (--left === 0) resolve(values); };
      list.forEach((p, i) => p.then(
        (value) => done(i, { status: 'fulfilled', value }),
        (reason) => done(i, { status: 'rejected', reason }),
      ));
    });
  }
  static race(items) {
    return new LayerPromise((resolve, reject) => {
      for (const p of promiseItems(items, 'Promise.race')) p.then(resolve, reject);
    });
  }
  static any(items) {
    return new LayerPromise((resolve, reject) => {
      const list = promiseItems(items, 'Promise.any');
      const errors = new Array(list.length);
      let left = list.length;
      const fail = () => {
        const e = typeof AggregateError === 'function' ? new AggregateError(errors, 'All promises were rejected') : new Error('All promises were rejected');
        e.errors = errors;
        reject(e);
      };
      if (!left) fail();
      list.forEach((p, i) => p.then(resolve, (e) => { errors[i] = e; if (--left === 0) fail(); }));
    });
  }
}
const PROMISE_PROTO = LayerPromise.prototype;
Object.defineProperty(LayerPromise.prototype, Symbol.toStringTag, { value: 'Promise' });
Object.defineProperty(LayerPromise, 'name', { value: 'Promise' });
globalThis.Promise = LayerPromise;
globalThis.queueMicrotask = (fn) => {
  if (typeof fn !== 'function') throw new TypeError('queueMicrotask needs a function');
  asyncSeen = true;
  microtasks.push(runUserJob, fn);
};

function runUserJob(fn) {
  try { fn(); } catch (e) { uncaughtErrors.push(e); }
}

// The driver of a rewritten `async` function: runs the generator `body` (with the
// function's `this` and, where it reads them, its `arguments`) up to each `yield` (an
// `await`) and resumes it with the settled value of what it yielded, on a later turn.
// The function's run is one object, `{ gen, p, child: null, from, sent }`: the reaction
// a pending promise it awaits keeps (`child` null marks it) and the argument of the job
// that resumes it (`sent`: the value it is resumed with), so an await makes no closure.
function __k6async(self, args, body) {
  const gen = args !== null ? body.apply(self, args) : self === undefined ? body() : body.call(self);
  const p = newPromise();
  const run = { gen, p, child: null, from: null, sent: undefined };
  asyncStep(run, true, undefined, false);
  return p;
}

function asyncResumeOk(run) {
  const v = run.sent;
  run.sent = undefined;
  asyncStep(run, true, v, true);
}

function asyncResumeErr(run) {
  const e = run.sent;
  run.sent = undefined;
  asyncStep(run, false, e, true);
}

// Resumes `run`'s generator with `arg` (thrown into it unless `ok`) and goes on to its
// next `await`: one of a pending promise adds `run` as its reaction; one of a settled
// value queues the job that resumes it (a turn later, in the place the language gives
// it). `job`: this runs as a job of the queue (not inside the script's own call), so
// with no other job queued the job it would queue is the very next to run: it runs
// here instead, in the same order, without the queue's round trip.
function asyncStep(run, ok, arg, job) {
  const gen = run.gen;
  for (;;) {
    let r;
    try { r = ok ? gen.next(arg) : gen.throw(arg); } catch (e) { settlePromise(run.p, P_REJECTED, e); return; }
    if (r.done) { resolvePromise(run.p, r.value); return; }
    const v = r.value;
    if (v instanceof LayerPromise && v.constructor === LayerPromise) { // isLayerPromise(v), inlined
      const state = v._state;
      if (state === P_PENDING) { addReaction(v, run); return; }
      if (state === P_REJECTED && !v._handled) unhandledRejections.delete(v);
      v._handled = true;
      ok = state === P_FULFILLED;
      arg = v._value;
    } else if (v === null || (typeof v !== 'object' && typeof v !== 'function')) {
      // Not a thenable (a number, a string): resumed on the next turn, as a promise
      // fulfilled with it would resume it, without making that promise.
      ok = true;
      arg = v;
    } else {
      let then;
      let threw = false;
      try { then = v.then; } catch (e) { threw = true; then = e; }
      if (threw) {
        ok = false;
        arg = then;
      } else if (typeof then !== 'function') {
        ok = true; // an object that is not a thenable (a Response)
        arg = v;
      } else {
        addReaction(LayerPromise.resolve(v), run); // pending: its `then` runs on a later turn
        return;
      }
    }
    if (job && microtaskHead === microtasks.length) continue;
    run.sent = arg;
    microtasks.push(ok ? asyncResumeOk : asyncResumeErr, run);
    return;
  }
}

// What a call into the script left behind: its jobs and (k6's event loop) its timers
// and sockets are run; then `returned`, or the value it settled with if it is a promise.
// `what` names the call in a warning (with `exported`, it is the exported function's
// name).
// A rejection throws (a failed iteration, with the error's stack), as does a rejection
// nobody handled ("Uncaught (in promise)", as k6 reports it).
let warnedPending = false;
function settleCall(returned, what, exported) {
  if (microtasks.length) drainMicrotasks();
  runMainLoop();
  let out = returned;
  if (returned instanceof LayerPromise) {
    unhandledRejections.delete(returned);
    returned._handled = true;
    if (returned._state === P_REJECTED) {
      unhandledRejections.clear();
      throw returned._value;
    }
    if (returned._state === P_PENDING) {
      out = undefined;
      if (!warnedPending) {
        warnedPending = true;
        // Named here, not by the caller: a text made per iteration costs it.
        if (exported) what = `the function ${what}`;
        hostVu.log('warn', `the promise ${what} returned was still pending when nothing was left to wait for (no timer, socket or job): the call ends there, as in k6`);
      }
    } else {
      out = returned._value;
    }
  }
  throwUncaught();
  return out;
}

// A module's top-level `await`s, run to their end in the init code: a rejection throws
// (the init code fails with it, as in k6); one still pending once no job is left waits
// for what the init code cannot run (a timer, a socket), and is refused, naming it.
function settleModule(returned, id) {
  if (microtasks.length) drainMicrotasks();
  returned._handled = true;
  unhandledRejections.delete(returned);
  if (returned._state === P_REJECTED) throw returned._value;
  if (returned._state === P_PENDING) {
    throw new Error(`${id}: a top-level await was still pending when the init code had nothing left to run: the init code runs no timers or sockets (await those in a function the iterations call)`);
  }
}

// After init code: its jobs, and what they left unhandled.
function settleInit() {
  if (microtasks.length) drainMicrotasks();
  throwUncaught();
}

function throwUncaught() {
  if (uncaughtErrors.length) {
    const e = uncaughtErrors[0];
    uncaughtErrors.length = 0;
    unhandledRejections.clear();
    throw e;
  }
  if (!rejectionsSeen) return;
  if (!unhandledRejections.size) { rejectionsSeen = false; return; }
  const [first] = unhandledRejections;
  unhandledRejections.clear();
  const e = first._value;
  if (e instanceof Error) {
    e.message = `Uncaught (in promise) ${e.message}`;
    throw e;
  }
  const err = new Error(`Uncaught (in promise) ${format(e)}`);
  // Where the value was thrown, when it was (bundle.js's __k6throw).
  const t = lastThrown;
  if (t && Object.is(t.value, e)) { err.__k6stack = t.stack; lastThrown = null; }
  throw err;
}

// k6/http's asyncRequest: k6 starts the request at once and lets the script go on, so
// requests a script starts before it awaits them are in flight together. Here a VU's
// requests go through the host's imports, which block the VU's one thread of JS, so
// the request is queued and its promise left pending; the queue is sent the next time
// the script yields (an `await`, the end of its call, a timer or socket turn) or makes
// a request of its own: one request alone as `http.request` sends it, several at once
// as `http.batch` sends them (in parallel, within `batch` and `batchPerHost`). Each
// promise then settles with its Response, or rejects with what `http.request` would
// have thrown. An iteration that fails with requests still queued sends them before
// it ends (k6 had started them), though nothing waits for their answers.
const asyncQueue = []; // request, promise, request, promise, ...
function asyncRequest(method, url, body, params) {
  if (phase !== 'iteration' && phase !== 'setup' && phase !== 'teardown') {
    // Init code and handleSummary: no turn of the event loop follows to send it.
    try {
      return LayerPromise.resolve(request(method, url, body, params));
    } catch (e) {
      return LayerPromise.reject(e);
    }
  }
  let req;
  try {
    req = buildRequest(method, url, body, params);
  } catch (e) {
    return LayerPromise.reject(e);
  }
  const p = newPromise();
  asyncQueue.push(req, p);
  return p;
}

// Sends the queued asyncRequests together and settles their promises.
function flushAsync() {
  const queued = asyncQueue.splice(0);
  const reqs = [];
  for (let i = 0; i < queued.length; i += 2) reqs.push(queued[i]);
  let words;
  try {
    words = reqs.length === 1 ? [hostResponses.send(reqs[0])] : hostResponses.sendBatch(reqs);
  } catch (e) {
    for (let i = 1; i < queued.length; i += 2) settlePromise(queued[i], P_REJECTED, e);
    return;
  }
  for (let i = 0; i < reqs.length; i++) {
    // `answer` throws what `http.request` would have thrown: the promise rejects with it.
    try {
      settlePromise(queued[2 * i + 1], P_FULFILLED, answer(reqs[i], words[i]));
    } catch (e) {
      settlePromise(queued[2 * i + 1], P_REJECTED, e);
    }
  }
}
k6http.asyncRequest = asyncRequest;

