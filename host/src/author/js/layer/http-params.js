// ---------------------------------------------------------------- k6/http

function canonicalHeader(name) {
  return name.replace(/(^|-)([a-z])/g, (_, d, c) => d + c.toUpperCase());
}

function parseDuration(v, what) {
  if (v === undefined || v === null) return null;
  if (typeof v === 'number') return Math.round(v);
  const m = /^\s*([0-9.]+)\s*(ms|s|m|h|us|µs)?\s*$/.exec(String(v));
  if (!m) throw new Error(`${what}: ${JSON.stringify(v)} is not a duration (e.g. "10s", 500)`);
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1000, m: 60000, h: 3600000, us: 0.001, 'µs': 0.001 }[m[2] || 'ms'];
  return Math.round(n * unit);
}

function formEncode(obj) {
  const parts = [];
  for (const k in obj) {
    const v = obj[k];
    const vals = Array.isArray(v) ? v : [v];
    for (const x of vals) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(x === null || x === undefined ? '' : String(x))}`);
  }
  return parts.join('&');
}

