// ---------------------------------------------------------------- k6/ws, k6/websockets, k6/timers
//
// Both of k6's WebSocket APIs over the host's `websocket` import (so the host records
// ws_sessions, ws_msgs_sent, ... as for any plugin). The host's socket is pull-based
// (`recv(timeout)`), so the callbacks run from a loop here: `ws.connect` (k6/ws) runs
// its socket's loop until the socket closes; the WebSocket class, `k6/timers` and the
// global setTimeout/setInterval share one loop that runs after the iteration function
// returns, until no socket or timer is left (k6's event loop).

// A loop's state: its timers (id → {fn, at, every, args}), its sockets and the
// callbacks queued to run on its next turn.
function newLoop() { return { timers: new Map(), sockets: new Set(), queue: [] }; }
// The last timer's id: an object's property, as this runtime's native receive loop
// (`recvLoop` below) reads it to stop when a callback added a timer.
const timerSeq = { last: 0 };

function addTimer(loop, fn, ms, repeat, args) {
  if (typeof fn !== 'function') throw new TypeError('setTimeout/setInterval need a function');
  const every = Math.max(0, Number(ms) || 0);
  const id = ++timerSeq.last;
  asyncSeen = true;
  loop.timers.set(id, { fn, at: Date.now() + every, every: repeat ? Math.max(1, every) : 0, args });
  return id;
}

// The first tick of an interval after `now`, on its grid `at + n × every`.
function nextTick(at, every, now) {
  const next = at + every;
  return next > now ? next : next + Math.ceil((now - next + 1) / every) * every;
}

// Receives from one socket for up to `ms` (0: only what has arrived) and not past
// `until` (a time as Date.now() reads it: the next timer's; Infinity when none) for a
// WebSocket; whether anything happened (a message, or the socket's end).
function pollSocket(s, ms, until) {
  if (s.poll) return s.poll(ms); // a gRPC stream
  // Arithmetic, not Math.max/min/round: each native call costs the interpreter
  // 1-4 k operations, and this runs once per message received.
  ms = ms > 0 ? (ms < 2147483647 ? (ms + 0.5) | 0 : 2147483647) : 0;
  // A text message comes as a string (`sockets.recv-text`), not as a result holding
  // an option holding a variant; the host stops waiting at `until`, so the loop needs
  // no clock read per message.
  const t = recvText(s.id, until, ms);
  if (t !== null && t !== undefined) {
    s.text(t);
    return true;
  }
  return pollOther(s, until);
}

// The receive of the layer's text message import, kept in a binding: the one-socket
// loop below calls it once per message, and a property lookup on the import object
// each time is interpreter work for nothing.
const recvText = hostSockets.recvText;
// This project's runtime's native one-socket receive loop (plugins/js-runtime/src/
// natives.rs): the loop below with the script's handlers called from native code, so
// per message the interpreter runs only the script's callback. The vendored runtime
// has none: then the loop below runs in JavaScript.
const recvLoop = hostSockets.recvLoop;

// After `recv-text` gave nothing: nothing came, `until` passed, or a binary message or
// the end is next, which the contract's receive gives at once. Whether anything
// happened.
function pollOther(s, until) {
  if (until !== Infinity && Date.now() >= until) return false;
  let m;
  try {
    m = s.handle.recv(0);
  } catch (e) {
    s.ended(e);
    return true;
  }
  if (m === null || m === undefined) return false;
  s.received(m);
  return true;
}

// Whether the one-socket receive of runLoop must give the turn back: its socket or
// `owner` closed, or a callback added a timer (the last id is no longer `ids`), queued
// a callback, a job or an asyncRequest. (The native `recvLoop` asks the same itself.)
function turnEnds(s, owner, ids, queue) {
  return !s.open || timerSeq.last !== ids || queue.length !== 0 || microtasks.length !== 0
    || asyncQueue.length !== 0 || (owner !== null && !owner.open);
}

// Turns the loop until `owner` (a socket's entry: ws.connect's loop ends with its
// socket; null for the main loop) closes or nothing is left to wait for. It runs once per
// message a socket receives (capacity.js: 200 live views, ~4,000 pushes a second), so
// a turn allocates nothing when no timer is due and one socket is open: no array of
// due timers, no copy of the socket set, the clock read only when a timer exists.
function runLoop(loop, owner) {
  const queue = loop.queue;
  for (;;) {
    while (queue.length) queue.shift()();
    if (microtasks.length) drainMicrotasks(); // what the callbacks' promises resume
    // The asyncRequests the script started before it yielded, sent together; their
    // promises' jobs run on the next turn.
    if (asyncQueue.length) { flushAsync(); continue; }
    if (owner !== null && !owner.open) return;
    let now = 0;
    let next = Infinity;
    let due = null;
    if (loop.timers.size) {
      now = Date.now();
      loop.timers.forEach((t, id) => {
        if (t.at <= now) (due || (due = [])).push([id, t]);
        else if (t.at < next) next = t.at;
      });
    }
    if (due !== null) {
      due.sort((a, b) => a[1].at - b[1].at || a[0] - b[0]);
      for (const [id, t] of due) {
        if (!loop.timers.has(id)) continue; // cleared by an earlier callback
        // An interval keeps its schedule (start + n × every), as k6's Go ticker does:
        // re-arming from `now` would let it drift behind a timeout set for the same
        // moment (demo-visitor's last inbox poll and its close). Missed ticks are
        // skipped, not run late in a burst.
        if (t.every) t.at = nextTick(t.at, t.every, now); else loop.timers.delete(id);
        t.fn(...(t.args || []));
        while (queue.length) queue.shift()();
        if (microtasks.length) drainMicrotasks();
        if (asyncQueue.length) break; // sent at the top of the loop, before the next timer
        if (owner !== null && !owner.open) return;
      }
      continue;
    }
    // The open sockets: the first, and all of them only when there are several.
    let first = null;
    let open = null;
    for (const s of loop.sockets) {
      if (!s.open) continue;
      if (first === null) first = s;
      else (open || (open = [first])).push(s);
    }
    if (first === null) {
      if (!loop.timers.size) return;
      sleep((next - now) / 1000);
      continue;
    }
    let wait = next === Infinity ? 1000 : Math.max(1, next - now);
    if (open === null) {
      // One socket: receive message after message here while nothing else can have
      // become due (no callback, job or asyncRequest queued, no timer added, the next
      // timer not reached),
      // rather than re-walking the timers and sockets per message. A cleared timer
      // only ends this early, at the time it would have run.
      // A WebSocket's receive stops at the next timer itself (`until`); a gRPC
      // stream's is given what is left of the wait after each message.
      const ids = timerSeq.last;
      if (first.poll !== undefined) {
        while (first.poll(wait) && !turnEnds(first, owner, ids, queue)) {
          if (next !== Infinity) {
            now = Date.now();
            if (now >= next) break;
            wait = next - now;
          }
        }
        continue;
      }
      // A WebSocket: pollSocket's receive written out here, with the socket's number
      // (`id`) and text callback held in locals, as this runs once per message (capacity.js:
      // ~4,000 a second, each a wake-up of one VU among 200, whose every interpreter
      // operation and cache line touched counts).
      // A k6/ws socket's 'message' handlers (`messages`: the array `on` adds to, made
      // with the socket) are called from here, one JS call fewer per message than
      // through its `text`.
      const id = first.id;
      const text = first.text;
      const fns = first.messages;
      const ms = next !== Infinity ? 2147483647 : 1000;
      if (recvLoop !== undefined) {
        // The same loop, its text messages received and handled natively until
        // nothing came (false: then what pollOther finds) or a stop below (true).
        const handlers = fns === undefined ? text : fns;
        for (;;) {
          if (recvLoop(id, next, ms, handlers, first, owner, queue, microtasks, asyncQueue, timerSeq, ids)) break;
          if (!pollOther(first, next)) break;
          if (turnEnds(first, owner, ids, queue)) break;
        }
        continue;
      }
      for (;;) {
        const t = recvText(id, next, ms);
        if (t !== null && t !== undefined) {
          if (fns === undefined) text(t);
          else if (fns.length === 1) fns[0](t);
          else for (let i = 0; i < fns.length; i++) fns[i](t);
        } else if (!pollOther(first, next)) break;
        if (turnEnds(first, owner, ids, queue)) break;
      }
    } else {
      // The host waits on one socket at a time: take what has arrived on each, then
      // wait briefly on the first, so no socket waits more than ~10 ms behind another.
      let any = false;
      for (const s of open) if (pollSocket(s, 0, next)) any = true;
      if (!any) pollSocket(first, Math.min(wait, 10), next);
    }
  }
}

// The loop of the WebSocket class and the global timers: run after the iteration.
const mainLoop = newLoop();

const timers = {
  setTimeout: (fn, ms, ...args) => addTimer(mainLoop, fn, ms, false, args),
  setInterval: (fn, ms, ...args) => addTimer(mainLoop, fn, ms, true, args),
  clearTimeout: (id) => { mainLoop.timers.delete(id); },
  clearInterval: (id) => { mainLoop.timers.delete(id); },
};
Object.assign(globalThis, timers);

// After the iteration function: what its sockets and timers still have to do.
function runMainLoop() {
  if (mainLoop.queue.length || mainLoop.timers.size || mainLoop.sockets.size || asyncQueue.length) runLoop(mainLoop, null);
}

// An iteration that failed leaves nothing behind for the next one.
function resetMainLoop() {
  resetMicrotasks();
  asyncQueue.length = 0;
  mainLoop.queue.length = 0;
  mainLoop.timers.clear();
  for (const s of mainLoop.sockets) {
    if (s.handle) { try { s.handle[Symbol.dispose](); } catch (_) { /* gone */ } }
  }
  mainLoop.sockets.clear();
}
