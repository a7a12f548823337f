// ---------------------------------------------------------------- k6/experimental/streams
//
// ReadableStream as the WHATWG Streams standard has it and k6 offers it: an underlying
// source's start/pull/cancel, a default controller (enqueue, close, error,
// desiredSize), a default reader (read, releaseLock, cancel, closed), queuing
// strategies (CountQueuingStrategy, ByteLengthQueuingStrategy, or any
// {highWaterMark, size}). Byte streams, BYOB readers and tee() are refused as k6
// refuses them (NotSupportedError; the build refuses tee() and the pipes first). The steps follow the standard's algorithms on the
// layer's Promise, so a source's pull runs as a promise job, when the queue is below
// its high-water mark or a read waits.

// In a scope of its own: the classes are the module's, not globals of the script.
const k6streams = (() => {
  function streamsNotSupported(what) {
    const e = new Error(`${what} is not supported yet`);
    e.name = 'NotSupportedError';
    return e;
  }

  function strategyArgument(name, args) {
    if (args.length !== 1) throw new TypeError(`${name} takes a single argument`);
    const init = args[0];
    if (init === null || typeof init !== 'object' || !('highWaterMark' in init)) {
      throw new TypeError(`${name} argument must have 'highWaterMark' property`);
    }
    return init.highWaterMark;
  }

  class CountQueuingStrategy {
    constructor(...args) {
      this.highWaterMark = strategyArgument('CountQueuingStrategy', args);
    }
    size() { return 1; }
  }

  class ByteLengthQueuingStrategy {
    constructor(...args) {
      this.highWaterMark = strategyArgument('ByteLengthQueuingStrategy', args);
    }
    size(chunk) { return chunk.byteLength; }
  }

  // The standard's ExtractHighWaterMark: a number, not NaN, not negative.
  function highWaterMarkOf(strategy, fallback) {
    if (strategy === undefined || strategy === null || strategy.highWaterMark === undefined) return fallback;
    const hwm = Number(strategy.highWaterMark);
    if (Number.isNaN(hwm) || hwm < 0) throw new RangeError('highWaterMark must be a non-negative number');
    return hwm;
  }

  class ReadableStreamDefaultController {
    constructor(stream, key) {
      if (key !== streamKey) throw new TypeError('ReadableStreamDefaultController cannot be constructed');
      this._stream = stream;
      this._queue = []; // [chunk, size]
      this._queueTotal = 0;
      this._started = false;
      this._closeRequested = false;
      this._pulling = false;
      this._pullAgain = false;
      this._pull = null;
      this._cancel = null;
      this._size = null;
      this._hwm = 1;
    }

    get desiredSize() {
      const state = this._stream._state;
      if (state === 'errored') return null;
      if (state === 'closed') return 0;
      return this._hwm - this._queueTotal;
    }

    close() {
      if (!this._canCloseOrEnqueue()) throw new TypeError('cannot close or enqueue');
      this._closeRequested = true;
      if (this._queue.length === 0) {
        this._clearAlgorithms();
        streamClose(this._stream);
      }
    }

    enqueue(chunk) {
      if (!this._canCloseOrEnqueue()) throw new TypeError('cannot close or enqueue');
      const stream = this._stream;
      if (stream._reader && stream._reader._requests.length > 0) {
        // A read waits: the chunk goes to it, not to the queue.
        stream._reader._requests.shift().resolve({ value: chunk, done: false });
      } else {
        let size = 1;
        if (this._size) {
          try {
            size = this._size(chunk);
          } catch (e) {
            this._error(e);
            throw e;
          }
        }
        size = Number(size);
        if (Number.isNaN(size) || size < 0 || size === Infinity) {
          const e = new RangeError('the chunk size must be a finite, non-negative number');
          this._error(e);
          throw e;
        }
        this._queue.push([chunk, size]);
        this._queueTotal += size;
      }
      this._pullIfNeeded();
    }

    error(e) {
      this._error(e);
    }

    _error(e) {
      if (this._stream._state !== 'readable') return;
      this._queue = [];
      this._queueTotal = 0;
      this._clearAlgorithms();
      streamError(this._stream, e);
    }

    _canCloseOrEnqueue() {
      return !this._closeRequested && this._stream._state === 'readable';
    }

    _clearAlgorithms() {
      this._pull = null;
      this._cancel = null;
      this._size = null;
    }

    _shouldPull() {
      const stream = this._stream;
      if (!this._canCloseOrEnqueue() || !this._started) return false;
      if (stream._reader && stream._reader._requests.length > 0) return true;
      return this.desiredSize > 0;
    }

    _pullIfNeeded() {
      if (!this._shouldPull()) return;
      if (this._pulling) {
        this._pullAgain = true;
        return;
      }
      this._pulling = true;
      let pulled;
      try {
        pulled = Promise.resolve(this._pull ? this._pull(this) : undefined);
      } catch (e) {
        pulled = Promise.reject(e);
      }
      pulled.then(() => {
        this._pulling = false;
        if (this._pullAgain) {
          this._pullAgain = false;
          this._pullIfNeeded();
        }
      }, (e) => this._error(e));
    }

    // A read with the queue not empty: its first chunk.
    _take() {
      const [chunk, size] = this._queue.shift();
      this._queueTotal = Math.max(0, this._queueTotal - size);
      if (this._closeRequested && this._queue.length === 0) {
        this._clearAlgorithms();
        streamClose(this._stream);
      } else {
        this._pullIfNeeded();
      }
      return chunk;
    }
  }

  // Only the layer makes controllers and readers' internals.
  const streamKey = {};

  function streamClose(stream) {
    stream._state = 'closed';
    const reader = stream._reader;
    if (!reader) return;
    for (const r of reader._requests.splice(0)) r.resolve({ value: undefined, done: true });
    reader._closedResolve();
  }

  function streamError(stream, e) {
    stream._state = 'errored';
    stream._storedError = e;
    const reader = stream._reader;
    if (!reader) return;
    for (const r of reader._requests.splice(0)) r.reject(e);
    reader._closedReject(e);
  }

  function streamCancel(stream, reason) {
    if (stream._state === 'closed') return Promise.resolve(undefined);
    if (stream._state === 'errored') return Promise.reject(stream._storedError);
    streamClose(stream);
    const c = stream._controller;
    c._queue = [];
    c._queueTotal = 0;
    const cancel = c._cancel;
    c._clearAlgorithms();
    let done;
    try {
      done = Promise.resolve(cancel ? cancel(reason) : undefined);
    } catch (e) {
      done = Promise.reject(e);
    }
    return done.then(() => undefined);
  }

  class ReadableStream {
    constructor(source, strategy) {
      if (source === undefined || source === null) source = {};
      if (typeof source !== 'object' && typeof source !== 'function') {
        throw new TypeError('the underlying source must be an object');
      }
      if (source.type !== undefined) {
        if (String(source.type) === 'bytes') throw streamsNotSupported("'bytes' stream");
        throw new TypeError(`invalid type: ${source.type}`);
      }
      this._state = 'readable';
      this._reader = null;
      this._storedError = undefined;
      const c = new ReadableStreamDefaultController(this, streamKey);
      this._controller = c;
      c._hwm = highWaterMarkOf(strategy, 1);
      if (strategy && strategy.size !== undefined) {
        if (typeof strategy.size !== 'function') throw new TypeError('the strategy size must be a function');
        const size = strategy.size;
        c._size = (chunk) => size.call(undefined, chunk);
      }
      for (const name of ['start', 'pull', 'cancel']) {
        if (source[name] !== undefined && typeof source[name] !== 'function') {
          throw new TypeError(`the underlying source's ${name} must be a function`);
        }
      }
      if (source.pull) c._pull = (ctrl) => source.pull.call(source, ctrl);
      if (source.cancel) c._cancel = (reason) => source.cancel.call(source, reason);
      const started = source.start ? source.start.call(source, c) : undefined;
      Promise.resolve(started).then(() => {
        c._started = true;
        c._pullIfNeeded();
      }, (e) => c._error(e));
    }

    get locked() {
      return this._reader !== null;
    }

    cancel(reason) {
      if (this.locked) return Promise.reject(new TypeError('cannot cancel a locked stream'));
      return streamCancel(this, reason);
    }

    getReader(options) {
      if (options !== undefined && options !== null && options.mode !== undefined) {
        if (String(options.mode) === 'byob') throw streamsNotSupported("'byob' mode");
        throw new TypeError(`invalid mode: ${options.mode}`);
      }
      return new ReadableStreamDefaultReader(this);
    }

    tee() {
      throw streamsNotSupported("'tee()'");
    }

    pipeTo() {
      throw streamsNotSupported("'pipeTo()'");
    }

    pipeThrough() {
      throw streamsNotSupported("'pipeThrough()'");
    }
  }

  class ReadableStreamDefaultReader {
    constructor(stream) {
      if (!(stream instanceof ReadableStream)) throw new TypeError('the reader needs a ReadableStream');
      if (stream.locked) throw new TypeError('stream is locked');
      this._stream = stream;
      this._requests = [];
      stream._reader = this;
      this._newClosed();
      if (stream._state === 'closed') this._closedResolve();
      if (stream._state === 'errored') this._closedReject(stream._storedError);
    }

    _newClosed() {
      this.closed = new Promise((resolve, reject) => {
        this._closedResolve = resolve;
        this._closedReject = reject;
      });
      // A rejection nobody awaits is not an uncaught one (the standard marks it handled).
      this.closed.catch(() => {});
    }

    read() {
      const stream = this._stream;
      if (!stream) return Promise.reject(new TypeError('stream is undefined'));
      if (stream._state === 'closed') return Promise.resolve({ value: undefined, done: true });
      if (stream._state === 'errored') return Promise.reject(stream._storedError);
      const c = stream._controller;
      if (c._queue.length > 0) return Promise.resolve({ value: c._take(), done: false });
      return new Promise((resolve, reject) => {
        this._requests.push({ resolve, reject });
        c._pullIfNeeded();
      });
    }

    cancel(reason) {
      if (!this._stream) return Promise.reject(new TypeError('stream is undefined'));
      return streamCancel(this._stream, reason);
    }

    releaseLock() {
      const stream = this._stream;
      if (!stream) return;
      const released = new TypeError('reader released');
      if (stream._state === 'readable') {
        this._closedReject(released);
      } else {
        this._newClosed();
        this._closedReject(released);
      }
      for (const r of this._requests.splice(0)) r.reject(released);
      stream._reader = null;
      this._stream = null;
    }
  }

  return { ReadableStream, ReadableStreamDefaultReader, CountQueuingStrategy, ByteLengthQueuingStrategy };
})();
