// ---------------------------------------------------------------- k6/experimental/redis, k6/x/redis
//
// k6's Redis client (grafana/xk6-redis: `k6/experimental/redis` in k6 1.x, the
// extension `k6/x/redis` in 2.x) over the contract's `sockets` interface: the host
// holds the VU's TCP (or TLS) connection, checks it against the allowlist
// (`tcp://host:port`) and counts its bytes; RESP is written and read here. Every method
// returns a promise, settled when the reply has been read. Beyond k6, each command is
// measured: redis_cmd_duration (a trend of times), redis_cmds and redis_cmd_failed, all
// tagged `command`, so a threshold can hold them.

const REDIS_CRLF = new Uint8Array([13, 10]);
// The longest reply line read (type, text, CRLF), and the deepest nested array.
const REDIS_MAX_LINE = 65536;
const REDIS_MAX_DEPTH = 8;

// What a command rejects with. k6 rejects with its Go error, which a script reads as
// `String(e)` or `JSON.stringify(e)` ("redis: nil"); this one reads the same and also
// has the `message` an Error has.
class RedisError extends Error {
  toString() { return this.message; }
  toJSON() { return this.message; }
}

function redisError(e) {
  if (e && typeof e === 'object' && e.tag) return new RedisError(`redis: ${e.tag}: ${e.val}`);
  if (e instanceof RedisError) return e;
  return new RedisError(e instanceof Error ? e.message : String(e));
}

// `redis[s]://[[user][:password]@]host[:port][/db]` or k6's options object.
function redisOptions(arg) {
  if (typeof arg === 'string') {
    const m = /^(rediss?):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?(\[[^\]]+\]|[^:/]+)(?::(\d+))?(?:\/(\d+))?\/?$/.exec(arg);
    if (!m) throw new Error(`redis: ${JSON.stringify(arg)} is not a redis:// or rediss:// URL`);
    return {
      host: m[4].replace(/^\[|\]$/g, ''),
      port: m[5] ? Number(m[5]) : 6379,
      tls: m[1] === 'rediss' ? {} : null,
      username: m[2] ? decodeURIComponent(m[2]) : '',
      password: m[3] !== undefined ? decodeURIComponent(m[3]) : '',
      database: m[6] ? Number(m[6]) : 0,
      dialTimeout: 5000, readTimeout: 3000, writeTimeout: 3000,
    };
  }
  const o = arg || {};
  const socket = o.socket || {};
  const addrs = o.addrs || (o.addr ? [o.addr] : null);
  let host = socket.host, port = socket.port;
  if (!host && addrs && addrs.length) {
    const [h, p] = String(addrs[0]).split(':');
    host = h; port = p;
  }
  const ms = (v, d) => (v === undefined || v === null ? d : Number(v));
  return {
    host: String(host || 'localhost'),
    port: Number(port || 6379),
    tls: socket.tls ? {} : null,
    serverName: socket.tls && socket.tls.serverName ? String(socket.tls.serverName) : null,
    username: o.username ? String(o.username) : '',
    password: o.password ? String(o.password) : '',
    database: Number(o.database || o.db || 0),
    dialTimeout: ms(socket.dialTimeout, 5000),
    readTimeout: ms(socket.readTimeout, 3000),
    writeTimeout: ms(socket.writeTimeout, 3000),
  };
}

function redisConcat(parts) {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

function redisEncode(args) {
  const parts = [utf8Encode(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = a instanceof Uint8Array ? a : utf8Encode(String(a));
    parts.push(utf8Encode(`$${b.length}\r\n`), b, REDIS_CRLF);
  }
  return redisConcat(parts);
}

// A reply: a string, a number, null, an array, or a server error (thrown as a RedisReplyError).
class RedisReplyError extends Error {}

function redisRead(sock, timeout, depth) {
  let line = sock.readUntil(REDIS_CRLF, REDIS_MAX_LINE, timeout);
  if (!(line instanceof Uint8Array)) line = new Uint8Array(line);
  if (line.length < 3) throw new RedisError('redis: a reply line without a type');
  const text = utf8Decode(line.subarray(1, line.length - 2));
  switch (line[0]) {
    case 43: return text; // +
    case 45: return new RedisReplyError(text); // -
    case 58: return Number(text); // :
    case 36: { // $
      const n = Number(text);
      if (n < 0) return null;
      let data = sock.readExact(n + 2, timeout);
      if (!(data instanceof Uint8Array)) data = new Uint8Array(data);
      return utf8Decode(data.subarray(0, n));
    }
    case 42: { // *
      const n = Number(text);
      if (n < 0) return null;
      if (depth >= REDIS_MAX_DEPTH) throw new RedisError('redis: arrays nested too deep');
      const items = [];
      for (let i = 0; i < n; i++) items.push(redisRead(sock, timeout, depth + 1));
      return items;
    }
    default: throw new RedisError(`redis: unknown reply type ${JSON.stringify(String.fromCharCode(line[0]))}`);
  }
}

class RedisClient {
  constructor(arg) {
    this._opts = redisOptions(arg);
    this._sock = null;
    this._seen = new Map();
    // Declared from describe() with the script's own metrics, so thresholds on them hold.
    metricsMade.set('redis_cmds', 'counter');
    metricsMade.set('redis_cmd_duration', 'trend');
    metricsMade.set('redis_cmd_failed', 'rate');
  }

  // The VU's connection, opened at the first command (as xk6-redis does), with AUTH and
  // SELECT when the options ask for them.
  _conn() {
    if (this._sock) return this._sock;
    if (inInitCode || phase === 'describe') throw new RedisError('redis: commands cannot run in the init context');
    const o = this._opts;
    const tls = o.tls ? { serverName: o.serverName } : null;
    this._sock = hostNet.TcpSocket.connect(o.host, o.port, { tls, timeoutMs: o.dialTimeout, tags: [] });
    try {
      if (o.password) this._raw(o.username ? ['AUTH', o.username, o.password] : ['AUTH', o.password]);
      if (o.database) this._raw(['SELECT', o.database]);
    } catch (e) {
      this._drop();
      throw e;
    }
    return this._sock;
  }

  _drop() {
    if (this._sock) { try { this._sock[Symbol.dispose](); } catch (_) { /* gone */ } }
    this._sock = null;
  }

  _raw(args) {
    const sock = this._sock;
    sock.write(redisEncode(args), this._opts.writeTimeout);
    const r = redisRead(sock, this._opts.readTimeout, 0);
    if (r instanceof RedisReplyError) throw r;
    return r;
  }

  // Runs one command, measured; a socket failure drops the connection (the next
  // command opens a new one). The host does the whole command (`k6-layer/redis`:
  // encode, write, one read of the whole reply, the three metrics) when every word is
  // a string or a number and its series have numbers; otherwise it runs here.
  _cmd(args, shape) {
    // Per command word, what the last command of that word found: its name, its
    // series' numbers and the group and VU tags they were registered under. Kept
    // while those are unchanged, a command costs no name or key string.
    let seen = this._seen.get(args[0]);
    if (seen === undefined || seen.group !== groupPath || seen.tags !== vuTagsVersion) {
      const name = seen === undefined ? String(args[0]).toLowerCase() : seen.name;
      seen = { name, ids: redisSeries(name), group: groupPath, tags: vuTagsVersion };
      this._seen.set(args[0], seen);
    }
    const words = seen.ids === null ? null : redisWords(args);
    if (words === null) return this._cmdHere(args, shape, seen.name);
    const ids = seen.ids;
    let r;
    try {
      const sock = this._sock || this._conn();
      const o = this._opts;
      r = redisFromText(hostRedis.command(sock, words, o.writeTimeout, o.readTimeout, ids[0], ids[1], ids[2]));
    } catch (e) {
      // A connect that failed, or the connection lost: the host counted the socket's
      // failure; the command is counted here, as the layer's own path counts it.
      this._drop();
      if (!(e instanceof RedisError)) this._record(seen.name, 0, false);
      return LayerPromise.reject(redisError(e));
    }
    if (r instanceof RedisReplyError) return LayerPromise.reject(new RedisError(r.message));
    // A reply is never a thenable (no function comes from the host's text).
    if (shape === undefined) return fulfilledPromise(r);
    try {
      return fulfilledPromise(shape(r));
    } catch (e) {
      return LayerPromise.reject(e);
    }
  }

  _record(name, ms, ok) {
    const tags = tagList({ command: name });
    hostMetrics.addTime('redis_cmd_duration', ms, tags);
    hostMetrics.add('redis_cmds', 'counter', 1, tags);
    hostMetrics.add('redis_cmd_failed', 'rate', ok ? 0 : 1, tags);
  }

  // The same command run in the layer: RESP encoded and read here.
  _cmdHere(args, shape, name) {
    const started = Date.now();
    let ok = false;
    try {
      let r;
      try {
        this._conn();
        r = this._raw(args);
      } catch (e) {
        if (!(e instanceof RedisReplyError)) this._drop();
        throw e instanceof RedisReplyError ? new RedisError(e.message) : redisError(e);
      }
      ok = true;
      return LayerPromise.resolve(shape ? shape(r) : r);
    } catch (e) {
      return LayerPromise.reject(e);
    } finally {
      this._record(name, Date.now() - started, ok);
    }
  }

  // Strings and keys.
  set(key, value, expiration) { return this._cmd(expiration ? ['SET', key, value, 'EX', expiration] : ['SET', key, value]); }
  get(key) { return this._cmd(['GET', key], redisNotNil); }
  getSet(key, value) { return this._cmd(['GETSET', key, value], redisNotNil); }
  del(...keys) { return this._cmd(['DEL', ...keys]); }
  getDel(key) { return this._cmd(['GETDEL', key], redisNotNil); }
  exists(...keys) { return this._cmd(['EXISTS', ...keys]); }
  incr(key) { return this._cmd(['INCR', key]); }
  incrBy(key, n) { return this._cmd(['INCRBY', key, n]); }
  decr(key) { return this._cmd(['DECR', key]); }
  decrBy(key, n) { return this._cmd(['DECRBY', key, n]); }
  randomKey() { return this._cmd(['RANDOMKEY'], redisNotNil); }
  mget(...keys) { return this._cmd(['MGET', ...keys]); }
  expire(key, seconds) { return this._cmd(['EXPIRE', key, seconds], (r) => r === 1); }
  ttl(key) { return this._cmd(['TTL', key]); }
  persist(key) { return this._cmd(['PERSIST', key], (r) => r === 1); }
  // Lists.
  lpush(key, ...values) { return this._cmd(['LPUSH', key, ...values]); }
  rpush(key, ...values) { return this._cmd(['RPUSH', key, ...values]); }
  lpop(key) { return this._cmd(['LPOP', key], redisNotNil); }
  rpop(key) { return this._cmd(['RPOP', key], redisNotNil); }
  lrange(key, start, stop) { return this._cmd(['LRANGE', key, start, stop]); }
  lindex(key, i) { return this._cmd(['LINDEX', key, i], redisNotNil); }
  lset(key, i, value) { return this._cmd(['LSET', key, i, value]); }
  lrem(key, count, value) { return this._cmd(['LREM', key, count, value]); }
  llen(key) { return this._cmd(['LLEN', key]); }
  // Hashes.
  hset(key, field, value) { return this._cmd(['HSET', key, field, value]); }
  hsetnx(key, field, value) { return this._cmd(['HSETNX', key, field, value], (r) => r === 1); }
  hget(key, field) { return this._cmd(['HGET', key, field], redisNotNil); }
  hdel(key, ...fields) { return this._cmd(['HDEL', key, ...fields]); }
  hgetall(key) {
    return this._cmd(['HGETALL', key], (r) => {
      const out = {};
      for (let i = 0; i + 1 < r.length; i += 2) out[r[i]] = r[i + 1];
      return out;
    });
  }
  hkeys(key) { return this._cmd(['HKEYS', key]); }
  hvals(key) { return this._cmd(['HVALS', key]); }
  hlen(key) { return this._cmd(['HLEN', key]); }
  hincrby(key, field, n) { return this._cmd(['HINCRBY', key, field, n]); }
  // Sets.
  sadd(key, ...members) { return this._cmd(['SADD', key, ...members]); }
  srem(key, ...members) { return this._cmd(['SREM', key, ...members]); }
  sismember(key, member) { return this._cmd(['SISMEMBER', key, member], (r) => r === 1); }
  smembers(key) { return this._cmd(['SMEMBERS', key]); }
  srandmember(key) { return this._cmd(['SRANDMEMBER', key], redisNotNil); }
  spop(key) { return this._cmd(['SPOP', key], redisNotNil); }
  // Any command.
  sendCommand(command, ...args) { return this._cmd([command, ...args]); }
}

// The words as the host takes them: `args` itself when every word is a string, a
// copy with numbers as strings, or null when a word is neither (bytes go the layer's
// own way).
function redisWords(args) {
  let words = args;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const t = typeof a;
    if (t === 'string') continue;
    if (t !== 'number') return null;
    if (words === args) words = args.slice();
    words[i] = String(a);
  }
  return words;
}

// The numbers of a command's three series (duration, count, failed) under the VU's
// and the group's tags, registered once per command name; null when the host keeps
// no more series (the command then runs in the layer, which records by name).
const redisSeriesIds = new Map();
function redisSeries(name) {
  let key = groupPath;
  if (vuTagsVersion !== 0) key += vuTagsKey();
  key += '\u0000' + name;
  let ids = redisSeriesIds.get(key);
  if (ids !== undefined) return ids;
  if (seriesMade + 3 > MAX_SERIES_IDS) return null;
  const list = tagList({ command: name });
  ids = [
    hostSamples.register('redis_cmd_duration', 'trend', true, list),
    hostSamples.register('redis_cmds', 'counter', false, list),
    hostSamples.register('redis_cmd_failed', 'rate', false, list),
  ];
  seriesMade += 3;
  if (ids[0] === null || ids[1] === null || ids[2] === null) ids = null;
  redisSeriesIds.set(key, ids);
  return ids;
}

// A reply as the host gives it (`k6-layer/redis.command`): its type, then its value.
function redisFromText(t) {
  const rest = t.slice(1);
  switch (t.charCodeAt(0)) {
    case 43: return rest; // + status
    case 36: return rest; // $ string
    case 58: return Number(rest); // : integer
    case 95: return null; // _ nil
    case 45: return new RedisReplyError(rest); // - server error
    case 42: return rest.indexOf('{') < 0 ? JSON.parse(rest) : JSON.parse(rest, redisRevive); // * aggregate
    default: throw new RedisError(`redis: ${rest}`); // ! the socket failed
  }
}

function redisRevive(_key, v) {
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && typeof v.error === 'string') return new RedisReplyError(v.error);
  return v;
}

// go-redis's answer to a missing key, which xk6-redis passes on as a rejection.
function redisNotNil(r) {
  if (r === null) throw new RedisError('redis: nil');
  return r;
}

const k6redis = { Client: RedisClient };
