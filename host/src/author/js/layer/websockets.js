// Its sockets run on the main loop (event-loop.js), after the iteration function.
const READY = { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 };

// k6/experimental/websockets (and k6/websockets): the browser's WebSocket.
class WebSocket {
  constructor(url, protocols, params) {
    if (protocols && !(Array.isArray(protocols) && !protocols.length)) {
      throw new Error('WebSocket: subprotocols are not supported here (docs/k6-compatibility.md)');
    }
    this.url = String(url);
    this.readyState = READY.CONNECTING;
    this.binaryType = 'blob';
    this.bufferedAmount = 0;
    this.protocol = '';
    this.onopen = null; this.onmessage = null; this.onerror = null; this.onclose = null;
    this._listeners = {};
    const self = this;
    this._entry = {
      handle: null, id: 0, open: false,
      text(t) { self._dispatch('message', { type: 'message', data: t, origin: self.url }); },
      received(m) {
        self._dispatch('message', { type: 'message', data: messageData(m, true), origin: self.url });
      },
      ended(e) {
        if (e && e.tag === 'closed') self._end(Number(e.val[0]), String(e.val[1] || ''), null);
        else self._end(1006, '', wsError(e));
      },
    };
    asyncSeen = true;
    mainLoop.sockets.add(this._entry);
    try {
      this._entry.handle = wsConnectHost(url, params);
      // The number the event loop receives by (`sockets.recv-text`), asked once.
      this._entry.id = hostSockets.id(this._entry.handle);
    } catch (e) {
      const msg = wsError(e);
      mainLoop.queue.push(() => this._end(1006, '', msg));
      return;
    }
    mainLoop.queue.push(() => {
      if (this.readyState !== READY.CONNECTING) return;
      this.readyState = READY.OPEN;
      this._entry.open = true;
      this._dispatch('open', { type: 'open' });
    });
  }
  addEventListener(type, fn) { (this._listeners[type] = this._listeners[type] || []).push(fn); }
  removeEventListener(type, fn) {
    const l = this._listeners[type];
    if (l) { const i = l.indexOf(fn); if (i >= 0) l.splice(i, 1); }
  }
  _dispatch(type, event) {
    const own = this[`on${type}`];
    if (typeof own === 'function') own.call(this, event);
    for (const fn of (this._listeners[type] || []).slice()) fn.call(this, event);
  }
  _end(code, reason, error) {
    if (this.readyState === READY.CLOSED) return;
    this.readyState = READY.CLOSED;
    this._entry.open = false;
    mainLoop.sockets.delete(this._entry);
    if (error) this._dispatch('error', { type: 'error', error });
    this._dispatch('close', { type: 'close', code, reason, wasClean: !error });
    if (this._entry.handle) { try { this._entry.handle[Symbol.dispose](); } catch (_) { /* gone */ } }
  }
  send(data) {
    if (this.readyState !== READY.OPEN) throw new Error('WebSocket.send: the socket is not open');
    try {
      if (typeof data === 'string') this._entry.handle.sendText(data);
      else this._entry.handle.sendBinary(toBytes(data));
    } catch (e) { this._end(1006, '', wsError(e)); }
  }
  ping() { warnPing(); }
  close(code, reason) {
    if (this.readyState === READY.CLOSED || this.readyState === READY.CLOSING) return;
    const c = code === undefined ? 1000 : Number(code);
    const r = reason === undefined ? '' : String(reason);
    let err = null;
    if (this._entry.handle) {
      try { this._entry.handle.close(c, r); } catch (e) { if ((hostError(e) || {}).tag !== 'closed') err = wsError(e); }
    }
    this._end(c, r, err);
  }
}
Object.assign(WebSocket, READY);

const k6websockets = { WebSocket };
