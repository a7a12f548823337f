function wsError(e) {
  e = hostError(e);
  if (e && typeof e === 'object' && e.tag) return `${e.tag}: ${Array.isArray(e.val) ? e.val.join(' ') : e.val}`;
  return String(e);
}

function messageData(m, asBuffer) {
  if (m.tag === 'text') return m.val;
  const bytes = m.val instanceof Uint8Array ? m.val : new Uint8Array(m.val);
  return asBuffer ? bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) : bytes;
}

function wsConnectHost(url, params) {
  params = params || {};
  const headers = [];
  const h = params.headers || {};
  for (const k in h) if (h[k] !== undefined && h[k] !== null) headers.push([k, String(h[k])]);
  return hostWs.Socket.connect(String(url), headers, tagList(params.tags));
}

let pingWarned = false;
function warnPing() {
  if (pingWarned) return;
  pingWarned = true;
  hostVu.log('warn', 'ping(): the host answers and sends WebSocket pings itself; a script\'s ping is not sent and no pong event fires (docs/k6-compatibility.md)');
}

// k6/ws: `ws.connect(url, params, fn)` runs until the socket closes.
class K6Socket {
  constructor(handle, loop) {
    // The 'message' handlers' array is made here and kept (`on` adds to it), so the
    // event loop can hold it as the entry's `messages` and call them itself.
    const messages = [];
    this._handle = handle; this._loop = loop; this._on = { message: messages }; this.open = true; this._closing = false;
    const self = this;
    // `id`: the number the event loop receives by (`sockets.recv-text`), asked once.
    this._entry = {
      handle, id: hostSockets.id(handle), open: true, messages,
      text(t) { self._emit('message', t); },
      received(m) {
        if (m.tag === 'text') self._emit('message', m.val);
        else { const b = messageData(m, true); self._emit('binaryMessage', b); self._emit('binary', b); }
      },
      ended(e) {
        self._end(e && e.tag === 'closed' ? Number(e.val[0]) : 1006, e && e.tag !== 'closed' ? wsError(e) : null);
      },
    };
    asyncSeen = true;
    loop.sockets.add(this._entry);
  }
  on(event, fn) { (this._on[event] = this._on[event] || []).push(fn); }
  // One argument, no rest array or spread: `message` is emitted once per message.
  _emit(event, arg) {
    const fns = this._on[event];
    if (fns !== undefined) for (let i = 0; i < fns.length; i++) fns[i](arg);
  }
  _end(code, error) {
    if (!this._entry.open) return;
    this._entry.open = false; this.open = false;
    if (error) this._emit('error', { error: () => error, toString: () => error });
    this._emit('close', code);
    this._loop.timers.clear();
    try { this._handle[Symbol.dispose](); } catch (_) { /* already gone */ }
  }
  send(text) {
    if (!this._entry.open) return;
    try { this._handle.sendText(String(text)); } catch (e) { this._end(1006, wsError(e)); }
  }
  sendBinary(data) {
    if (!this._entry.open) return;
    try { this._handle.sendBinary(toBytes(data)); } catch (e) { this._end(1006, wsError(e)); }
  }
  ping() { warnPing(); }
  close(code) {
    if (!this._entry.open) return;
    let err = null;
    try { this._handle.close(code === undefined ? 1000 : Number(code), ''); } catch (e) { if ((hostError(e) || {}).tag !== 'closed') err = wsError(e); }
    this._end(code === undefined ? 1000 : Number(code), err);
  }
  setTimeout(fn, ms) { return addTimer(this._loop, fn, ms, false, []); }
  setInterval(fn, ms) { return addTimer(this._loop, fn, ms, true, []); }
  clearTimeout(id) { this._loop.timers.delete(id); }
  clearInterval(id) { this._loop.timers.delete(id); }
}

function wsConnect(url, params, fn) {
  if (typeof params === 'function') { fn = params; params = null; }
  let handle;
  try {
    handle = wsConnectHost(url, params);
  } catch (e) {
    throw new Error(`ws.connect ${url}: ${wsError(e)}`);
  }
  const loop = newLoop();
  const socket = new K6Socket(handle, loop);
  if (typeof fn === 'function') fn(socket);
  socket._emit('open');
  runLoop(loop, socket._entry);
  if (socket.open) socket.close(); // nothing left to wait for: k6 would wait forever
  return { status: 101, url: String(url), headers: {}, body: '', error: '' };
}

const k6ws = { connect: wsConnect };

