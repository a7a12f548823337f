// ---------------------------------------------------------------- options → run config

function tomlValue(v) {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(', ')}]`;
  if (v && typeof v === 'object') return `{ ${Object.keys(v).filter((k) => v[k] !== undefined).map((k) => `${JSON.stringify(k)} = ${tomlValue(v[k])}`).join(', ')} }`;
  throw new Error(`options: ${JSON.stringify(v)} has no TOML form`);
}

const DURATION_KEYS = ['duration', 'startTime', 'gracefulStop', 'gracefulRampDown', 'maxDuration', 'timeUnit'];
const SCENARIO_KEYS = {
  executor: 'executor', exec: 'exec', vus: 'vus', duration: 'duration', iterations: 'iterations',
  stages: 'stages', startVUs: 'start_vus', preAllocatedVUs: 'pre_allocated_vus', maxVUs: 'max_vus',
  rate: 'rate', timeUnit: 'time_unit', startRate: 'start_rate', startTime: 'start_time',
  gracefulStop: 'graceful_stop', gracefulRampDown: 'graceful_ramp_down', maxDuration: 'max_duration',
  env: 'env', tags: 'tags',
};

function durationText(v) { return typeof v === 'number' ? `${v}ms` : String(v); }

// A scenario's `options.browser.type` (k6 requires it of browser scenarios); other
// scenario options are refused.
function scenarioBrowser(name, o) {
  const keys = Object.keys(o || {});
  for (const k of keys) {
    if (k !== 'browser') throw new Error(`options.scenarios.${name}.options.${k} is not supported (docs/k6-compatibility.md)`);
  }
  const type = o.browser && o.browser.type;
  if (type !== 'chromium') throw new Error(`options.scenarios.${name}.options.browser.type must be 'chromium' (the only browser k6 and this host drive)`);
  return true;
}

function scenarioToml(name, s) {
  const lines = [`[scenarios.${JSON.stringify(name)}]`];
  for (const k of Object.keys(s)) {
    if (k === 'options') { scenarioBrowser(name, s.options); continue; }
    const key = SCENARIO_KEYS[k];
    if (!key) throw new Error(`options.scenarios.${name}.${k} is not supported (docs/k6-compatibility.md)`);
    let v = s[k];
    if (v === undefined) continue;
    if (DURATION_KEYS.includes(k)) v = durationText(v);
    if (k === 'stages') v = v.map((st) => ({ duration: durationText(st.duration), target: st.target }));
    lines.push(`${key} = ${tomlValue(v)}`);
  }
  return lines.join('\n');
}

function optionsToml(o) {
  const out = ['# From the script\'s `export const options` (k6 names in snake_case).'];
  let scenarios = o.scenarios;
  if (!scenarios) {
    if (o.stages) scenarios = { default: { executor: 'ramping-vus', startVUs: o.vus || 1, stages: o.stages } };
    else if (o.iterations) scenarios = { default: Object.assign({ executor: 'shared-iterations', vus: o.vus || 1, iterations: o.iterations }, o.duration ? { maxDuration: o.duration } : {}) };
    else if (o.duration) scenarios = { default: { executor: 'constant-vus', vus: o.vus || 1, duration: o.duration } };
    else scenarios = { default: { executor: 'per-vu-iterations', vus: o.vus || 1, iterations: 1 } };
  }
  for (const name of Object.keys(scenarios)) {
    // Global tags go on every scenario; a scenario's own tags win.
    const s = o.tags ? Object.assign({}, scenarios[name], { tags: Object.assign({}, o.tags, scenarios[name].tags || {}) }) : scenarios[name];
    out.push(scenarioToml(name, s));
  }
  // What k6's precedence of the command line needs (host/src/config/overrides/k6.rs):
  // whether the script named its scenarios, its top-level vus and tags.
  out.push('[k6]', `own_scenarios = ${!!o.scenarios}`);
  if (o.vus !== undefined) out.push(`vus = ${Number(o.vus)}`);
  if (o.tags) out.push(`tags = ${tomlValue(o.tags)}`);
  // A browser scenario: the host starts its browser before the run.
  if (Object.keys(scenarios).some((n) => scenarios[n].options)) out.push('[browser]');
  if (o.thresholds) {
    out.push('[thresholds]');
    for (const metric of Object.keys(o.thresholds)) {
      let list = o.thresholds[metric];
      if (!Array.isArray(list)) list = [list];
      list = list.map((t) => (typeof t === 'string' ? t : Object.assign(
        { threshold: t.threshold },
        t.abortOnFail !== undefined ? { abort_on_fail: !!t.abortOnFail } : {},
        t.delayAbortEval !== undefined ? { delay_abort_eval: durationText(t.delayAbortEval) } : {},
      )));
      out.push(`${JSON.stringify(metric)} = ${tomlValue(list)}`);
    }
  }
  // k6 counts setup()'s and teardown()'s requests in http_reqs (a teardown that polls
  // a queue until it drains adds hundreds): the host leaves them out unless told.
  const http = ['count_setup = true'];
  if (o.maxRedirects !== undefined) http.push(`max_redirects = ${Number(o.maxRedirects)}`);
  if (o.batch !== undefined) http.push(`batch = ${Number(o.batch)}`);
  if (o.batchPerHost !== undefined) http.push(`batch_per_host = ${Number(o.batchPerHost)}`);
  if (o.noCookiesReset !== undefined) http.push(`no_cookies_reset = ${!!o.noCookiesReset}`);
  if (o.userAgent !== undefined) http.push(`user_agent = ${JSON.stringify(String(o.userAgent))}`);
  out.push('[http]', ...http);
  if (o.insecureSkipTLSVerify) out.push('[tls]', 'insecure_skip_verify = true');
  // The trend columns of the summary; the host checks the names (and --summary-trend-stats
  // overrides them).
  if (o.summaryTrendStats !== undefined) {
    if (!Array.isArray(o.summaryTrendStats)) throw new Error('options.summaryTrendStats must be an array such as ["avg", "p(95)"]');
    out.push('[summary]', `trend_stats = ${tomlValue(o.summaryTrendStats.map(String))}`);
  }
  // The host has one limit for setup() and teardown(): the larger of the two.
  const limit = [o.setupTimeout, o.teardownTimeout].filter((v) => v !== undefined)
    .map((v) => parseDuration(v, 'options.setupTimeout/teardownTimeout'));
  if (limit.length) out.push('[limits]', `setup_timeout = ${JSON.stringify(`${Math.max(...limit)}ms`)}`);
  return out.join('\n') + '\n';
}

