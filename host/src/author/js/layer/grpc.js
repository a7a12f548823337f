// ---------------------------------------------------------------- k6/net/grpc
//
// k6's gRPC client over the host's `grpc` import: the host holds the channel (one
// HTTP/2 connection of the VU), compiles the .proto files, asks reflection, makes the
// calls and records grpc_req_duration, grpc_reqs, grpc_streams and the stream message
// counts, as for any plugin. The .proto files that `load` names were read when the
// script was built (bundle.rs, protos.rs) and are in BUNDLE.protos; the protosets that
// `loadProtoset` names (protosets.rs) are in BUNDLE.protosets. The host carries
// grpc.health.v1, which `healthCheck` calls.

const GRPC_STATUS = {
  StatusOK: 0, StatusCanceled: 1, StatusUnknown: 2, StatusInvalidArgument: 3,
  StatusDeadlineExceeded: 4, StatusNotFound: 5, StatusAlreadyExists: 6,
  StatusPermissionDenied: 7, StatusResourceExhausted: 8, StatusFailedPrecondition: 9,
  StatusAborted: 10, StatusOutOfRange: 11, StatusUnimplemented: 12, StatusInternal: 13,
  StatusUnavailable: 14, StatusDataLoss: 15, StatusUnauthenticated: 16,
};

// grpc.health.v1.HealthCheckResponse.ServingStatus, under k6's names (k6 spells the
// last one HealthCheckServiceUnkown; both are given).
const GRPC_HEALTH = {
  HealthCheckUnknown: 0, HealthCheckServing: 1, HealthCheckNotServing: 2,
  HealthCheckServiceUnknown: 3, HealthCheckServiceUnkown: 3,
};
const SERVING_STATUS = { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 };

// Metadata as grpc-go gives it to k6: names in lower case, each a list of values; the
// status fields of the trailers are not metadata.
function grpcMetadata(list) {
  const out = {};
  for (const [k, v] of list || []) {
    const name = k.toLowerCase();
    if (name === 'grpc-status' || name === 'grpc-message' || name === 'grpc-status-details-bin') continue;
    (out[name] = out[name] || []).push(v);
  }
  return out;
}

function grpcCallOptions(params, what) {
  params = params || {};
  for (const k of Object.keys(params)) {
    if (!['metadata', 'tags', 'timeout', 'discardResponseMessage'].includes(k)) {
      throw new Error(`${what}: unknown parameter ${JSON.stringify(k)} (metadata, tags, timeout, discardResponseMessage)`);
    }
  }
  const metadata = [];
  const md = params.metadata || {};
  for (const k in md) {
    const v = md[k];
    if (v === undefined || v === null) continue;
    const name = k.toLowerCase();
    // k6 sends an ArrayBuffer (or a string) under a `-bin` name as binary metadata.
    if (typeof v !== 'string') {
      if (!name.endsWith('-bin')) throw new Error(`${what}: metadata ${k} must be a string (binary values need a name ending in -bin)`);
      metadata.push([name, b64encode(v, 'rawstd')]);
    } else {
      metadata.push([name, name.endsWith('-bin') ? b64encode(v, 'rawstd') : v]);
    }
  }
  return {
    options: {
      metadata,
      timeoutMs: params.timeout === undefined || params.timeout === null ? null : parseDuration(params.timeout, `${what}: timeout`),
      tags: tagList(params.tags),
      expectedCodes: [],
    },
    discard: !!params.discardResponseMessage,
  };
}


// A failed call as k6's response: the status and the error object ({code, message}).
function grpcFailure(e) {
  e = hostError(e);
  if (!(e && typeof e === 'object' && e.tag)) throw e;
  if (e.tag === 'denied' || e.tag === 'invalid') throw new Error(`${e.tag}: ${e.val}`);
  if (e.tag === 'status') {
    const st = e.val;
    return {
      status: st.code, message: null, headers: grpcMetadata(st.headers), trailers: grpcMetadata(st.trailers),
      error: { code: st.code, message: st.message, details: [] },
    };
  }
  // What grpc-go reports for each: the deadline, an unreachable or refused peer, a
  // broken protocol.
  const code = e.tag === 'deadline' ? 4 : e.tag === 'protocol' ? 13 : 14;
  const message = e.tag === 'deadline' ? 'context deadline exceeded' : `${e.tag}: ${e.val}`;
  return { status: code, message: null, headers: {}, trailers: {}, error: { code, message, details: [] } };
}

function grpcErrorText(e) {
  e = hostError(e);
  if (e && typeof e === 'object' && e.tag === 'status') return `status ${e.val.code}: ${e.val.message}`;
  return wsError(e);
}

function grpcMethodName(method, what) {
  if (method === undefined || method === null || method === '') throw new Error(`${what}: method to invoke cannot be empty`);
  return String(method);
}

// The methods of a .proto's services: {package, service, full_method, name,
// is_client_stream, is_server_stream}, what k6's load returns.
function protoMethods(source) {
  const src = source.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g, '');
  const pkg = (/\bpackage\s+([\w.]+)\s*;/.exec(src) || [])[1] || '';
  const out = [];
  const svcRe = /\bservice\s+(\w+)\s*\{/g;
  let m;
  while ((m = svcRe.exec(src))) {
    // The service's body: up to its matching brace (methods may have option blocks).
    let depth = 1, i = svcRe.lastIndex;
    while (i < src.length && depth) { if (src[i] === '{') depth++; else if (src[i] === '}') depth--; i++; }
    const body = src.slice(svcRe.lastIndex, i);
    const rpcRe = /\brpc\s+(\w+)\s*\(\s*(stream\s+)?[\w.]+\s*\)\s*returns\s*\(\s*(stream\s+)?/g;
    let r;
    while ((r = rpcRe.exec(body))) {
      out.push({
        package: pkg, service: m[1], full_method: `/${pkg ? pkg + '.' : ''}${m[1]}/${r[1]}`,
        name: r[1], is_client_stream: !!r[2], is_server_stream: !!r[3],
      });
    }
  }
  return out;
}

// k6's connect param `tls` ({cert, key, password, cacerts}: PEM text, as open() reads
// it) as the host's channel-tls.
function grpcTlsMaterial(tls) {
  if (tls === undefined || tls === null) return null;
  if (typeof tls !== 'object' || Array.isArray(tls)) {
    throw new Error(`invalid tls value: '${String(tls)}', expected (optional) keys: cert, key, password, and cacerts`);
  }
  for (const k of Object.keys(tls)) {
    if (!['cert', 'key', 'password', 'cacerts'].includes(k)) throw new Error(`invalid tls value: unknown key ${JSON.stringify(k)}, expected (optional) keys: cert, key, password, and cacerts`);
  }
  const pem = (v, what) => {
    if (v === undefined || v === null || v === '') return null;
    if (typeof v !== 'string') throw new Error(`invalid tls ${what} value: it needs to be a PEM formatted string`);
    return v;
  };
  if (tls.password !== undefined && tls.password !== null && tls.password !== '') {
    throw new Error('client.connect: tls.password (an encrypted key) is not supported by this host: decrypt the key first (openssl pkey -in key.pem -out plain.pem) and give it without a password');
  }
  let cas = tls.cacerts === undefined || tls.cacerts === null ? [] : tls.cacerts;
  if (!Array.isArray(cas)) cas = [cas];
  const caCerts = cas.map((c) => pem(c, 'cacerts')).filter((c) => c !== null);
  const m = { clientCert: pem(tls.cert, 'cert'), clientKey: pem(tls.key, 'key'), caCerts };
  return m.clientCert === null && m.clientKey === null && !caCerts.length ? null : m;
}

// k6's reflectMetadata ({name: value}) as metadata pairs.
function grpcReflectMetadata(md) {
  if (md === undefined || md === null) return [];
  if (typeof md !== 'object' || Array.isArray(md)) throw new Error('invalid reflectMetadata param: it needs to be an object of strings');
  const out = [];
  for (const k of Object.keys(md)) {
    if (typeof md[k] !== 'string') throw new Error(`invalid reflectMetadata param: the value of ${k} needs to be a string`);
    out.push([k.toLowerCase(), md[k]]);
  }
  return out;
}

// `rpc error: code = NotFound desc = ...`, as grpc-go words a failed call.
function grpcRpcError(e) {
  e = hostError(e);
  if (e && typeof e === 'object' && e.tag === 'status') {
    const name = Object.keys(GRPC_STATUS).find((k) => GRPC_STATUS[k] === e.val.code);
    return `rpc error: code = ${name ? name.slice(6) : `Code(${e.val.code})`} desc = ${e.val.message}`;
  }
  return grpcErrorText(e);
}

class GrpcClient {
  constructor() {
    this._protos = [];
    this._names = new Set();
    this._sets = [];
    this._setNames = new Set();
    this._channel = null;
    this._addr = null;
  }

  // k6: load(importPaths, ...protoFiles), in the init code; the files come from the
  // bundle, where the build put them.
  load(importPaths, ...files) {
    if (!inInitCode) throw new Error('load must be called in the init context');
    const protos = BUNDLE.protos || {};
    const methods = [];
    for (const f of files) {
      const list = protos[String(f)];
      if (!list) throw new Error(`client.load: ${f} was not bundled by host build (load needs literal paths or __ENV values set at build time)`);
      for (const p of list) {
        if (this._names.has(p.name)) continue;
        this._names.add(p.name);
        this._protos.push(p);
      }
      // The methods of the files' services, as k6 returns them.
      for (const p of list) methods.push(...protoMethods(p.source));
    }
    return methods;
  }

  // k6: loadProtoset(path), in the init code; the file came from the bundle, decoded
  // once here (the init code runs when the component is built).
  loadProtoset(path) {
    if (!inInitCode) throw new Error('load must be called in the init context');
    const set = (BUNDLE.protosets || {})[String(path)];
    if (!set) throw new Error(`client.loadProtoset: ${path} was not bundled by host build (loadProtoset needs a literal path or an __ENV value set at build time)`);
    if (!this._setNames.has(String(path))) {
      this._setNames.add(String(path));
      this._sets.push(b64decodeBytes(set.b64));
    }
    return set.methods.map((m) => Object.assign({}, m));
  }

  connect(address, params) {
    if (inInitCode || phase === 'describe') throw new Error('connecting to a gRPC server in the init context is not supported');
    params = params || {};
    for (const k of Object.keys(params)) {
      if (!['plaintext', 'reflect', 'timeout', 'tls', 'maxReceiveSize', 'maxSendSize', 'reflectMetadata', 'authority'].includes(k)) {
        throw new Error(`client.connect: unknown parameter ${JSON.stringify(k)}`);
      }
    }
    const tlsMaterial = params.plaintext ? null : grpcTlsMaterial(params.tls);
    const reflectMetadata = grpcReflectMetadata(params.reflectMetadata);
    if (this._channel) this.close();
    const timeoutMs = params.timeout === undefined || params.timeout === null ? null : parseDuration(params.timeout, 'client.connect: timeout');
    try {
      this._channel = hostGrpc.Channel.open(String(address), {
        tls: !params.plaintext,
        protos: this._protos.map((p) => ({ name: p.name, source: p.source })),
        descriptorSets: this._sets,
        reflect: !!params.reflect,
        reflectMetadata,
        tlsMaterial,
        timeoutMs,
      });
    } catch (e) {
      throw new Error(`client.connect ${address}: ${grpcErrorText(e)}`);
    }
    this._addr = String(address);
    return true;
  }

  _call(method, request, params) {
    if (inInitCode || phase === 'describe') throw new Error('invoking RPC methods in the init context is not supported');
    if (!this._channel) throw new Error('no gRPC connection, you must call connect first');
    method = grpcMethodName(method, 'client.invoke');
    if (request === undefined || request === null) throw new Error('request cannot be nil');
    const { options, discard } = grpcCallOptions(params, 'client.invoke');
    // k6's default deadline of a unary call: 2 minutes.
    if (options.timeoutMs === null) options.timeoutMs = 120000;
    let res;
    try {
      res = this._channel.invoke(method, JSON.stringify(request), options);
    } catch (e) {
      return grpcFailure(e);
    }
    return {
      status: res.status.code,
      message: discard || res.message === null || res.message === undefined ? null : JSON.parse(res.message),
      headers: grpcMetadata(res.status.headers),
      trailers: grpcMetadata(res.status.trailers),
      error: null,
    };
  }

  invoke(method, request, params) { return this._call(method, request, params); }

  // k6: healthCheck(service?) calls grpc.health.v1.Health/Check (the host carries its
  // descriptors) and gives {status} (a HealthCheck* constant); a failed call throws.
  healthCheck(service) {
    if (inInitCode || phase === 'describe') throw new Error('invoking RPC methods in the init context is not supported');
    if (!this._channel) throw new Error('no gRPC connection, you must call connect first');
    const request = JSON.stringify({ service: service === undefined || service === null ? '' : String(service) });
    let res;
    try {
      // k6 gives no deadline; the unary default here (2 minutes) keeps a VU from waiting forever.
      res = this._channel.invoke('grpc.health.v1.Health/Check', request, { metadata: [], timeoutMs: 120000, tags: [], expectedCodes: [] });
    } catch (e) {
      throw new Error(grpcRpcError(e));
    }
    const status = JSON.parse(res.message).status;
    return { status: typeof status === 'number' ? status : (SERVING_STATUS[status] || 0) };
  }

  // The call is made now (the VU's one thread makes it: two asyncInvoke calls do not
  // overlap); its promise (the layer's) is already settled, and its callbacks run on
  // the layer's microtask queue, as k6's do on its event loop.
  asyncInvoke(method, request, params) {
    try {
      return LayerPromise.resolve(this._call(method, request, params));
    } catch (e) {
      return LayerPromise.reject(e);
    }
  }

  close() {
    if (!this._channel) return;
    try { this._channel[Symbol.dispose](); } catch (_) { /* already gone */ }
    this._channel = null;
  }
}

// k6's Stream: `new Stream(client, method, params)`, events `data`, `error`, `end`,
// `write(message)`, `end()`. Messages from the server are delivered by the layer's
// event loop (the same as the WebSocket class's), after the iteration function returns.
class GrpcStream {
  constructor(client, method, params) {
    if (!(client instanceof GrpcClient)) throw new Error('invalid GRPC Stream\'s client: not a gRPC client');
    if (!client._channel) throw new Error('invalid GRPC Stream\'s client: no gRPC connection, you must call connect first');
    method = grpcMethodName(method, 'new Stream');
    const { options, discard } = grpcCallOptions(params, 'new Stream');
    this._discard = discard;
    this._on = {};
    this._writing = true;
    try {
      this._info = client._channel.describeMethod(method);
      this._handle = client._channel.openStream(method, options);
    } catch (e) {
      throw new Error(`failed to create a new stream: ${grpcErrorText(e)}`);
    }
    const self = this;
    this._entry = {
      handle: this._handle, open: true,
      poll(ms) { return self._poll(ms); },
    };
    asyncSeen = true;
    mainLoop.sockets.add(this._entry);
  }

  on(event, fn) {
    if (typeof fn !== 'function') throw new Error(`handler for ${JSON.stringify(event)} event isn't a callable function`);
    if (!['data', 'error', 'end'].includes(event)) {
      hostVu.log('warn', `can't register ${event} event handler: unknown event (data, error, end)`);
      return;
    }
    (this._on[event] = this._on[event] || []).push(fn);
  }

  _emit(event, arg) {
    const meta = { ts: Math.floor(Date.now() / 1000) };
    for (const fn of this._on[event] || []) fn(arg, meta);
  }

  write(message) {
    if (!this._writing || !this._entry.open) return;
    if (message === undefined || message === null) { hostVu.log('warn', 'can\'t send empty message'); return; }
    try {
      this._handle.send(JSON.stringify(message));
    } catch (e) {
      this._fail(e);
      return;
    }
    // The host half-closes a server stream after its one request.
    if (!this._info.clientStreaming) this._writing = false;
  }

  end() {
    if (!this._writing) return;
    this._writing = false;
    if (!this._entry.open) return;
    try { this._handle.closeSend(); } catch (e) { this._fail(e); }
  }

  // One turn of the loop: waits up to `ms` for a message or the end; whether
  // anything happened.
  _poll(ms) {
    let item;
    try {
      item = this._handle.recv(Math.max(0, Math.min(Math.round(ms), 2147483647)));
    } catch (e) {
      this._fail(e);
      return true;
    }
    if (item.tag === 'timeout') return false;
    if (item.tag === 'message') {
      if (!this._discard) this._emit('data', JSON.parse(item.val));
      else this._emit('data', {});
      return true;
    }
    this._close();
    this._emit('end', {});
    return true;
  }

  _close() {
    this._entry.open = false;
    this._writing = false;
    mainLoop.sockets.delete(this._entry);
    try { this._handle[Symbol.dispose](); } catch (_) { /* already gone */ }
  }

  // A status other than OK, or a failure: `error` with k6's object, then `end`.
  _fail(e) {
    e = hostError(e);
    if (!this._entry.open) return;
    this._close();
    const r = e && typeof e === 'object' && e.tag && e.tag !== 'invalid' && e.tag !== 'denied' ? grpcFailure(e) : { error: { code: 2, message: grpcErrorText(e), details: [] } };
    if (!(this._on.error || []).length) hostVu.log('warn', `no handlers for error registered, but an error happened: ${r.error.message}`);
    this._emit('error', r.error);
    this._emit('end', {});
  }
}

const k6grpc = Object.assign({ Client: GrpcClient, Stream: GrpcStream }, GRPC_STATUS, GRPC_HEALTH);

