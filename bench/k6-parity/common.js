// Shared by the k6 scripts of bench/k6-parity: base URL, env numbers, and the
// thresholds that make k6 export one sub-metric per endpoint (method + name), so its
// percentiles can be set beside the host's endpoints table.

export const BASE = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
export const WS_BASE = BASE.replace(/^http/, 'ws');

export function num(name, fallback) {
  const v = parseInt(__ENV[name] || '', 10);
  return Number.isNaN(v) ? fallback : v;
}

// `[[method, name], ...]` -> thresholds that always pass but keep each sub-metric.
export function endpointThresholds(endpoints) {
  const t = {};
  for (const [method, name] of endpoints) {
    t[`http_req_duration{method:${method},name:${name}}`] = ['max>=0'];
  }
  return t;
}

// Deterministic SplitMix64-like sequence (in 32-bit halves, JS numbers are doubles).
export function rng(seed) {
  let s = (seed >>> 0) || 1;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0);
  };
}
