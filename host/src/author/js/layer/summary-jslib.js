// ---------------------------------------------------------------- k6-summary (jslib)

// jslib's k6-summary (`textSummary`, `jUnit`), which handleSummary scripts import by
// URL; the bundler maps any version of that URL here. The text follows k6's layout:
// the checks, then every metric as `name....: values`, sub-metrics indented.
function humanBytes(n) {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (Math.abs(n) >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return `${i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
}
function humanTime(ms) {
  if (ms === 0) return '0s';
  if (ms < 0.001) return `${(ms * 1e6).toFixed(0)}ns`;
  if (ms < 1) return `${(ms * 1000).toFixed(2)}µs`;
  if (ms < 1000) return `${ms.toFixed(2)}ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)}s`;
  const m = Math.floor(ms / 60000);
  return `${m}m${((ms - m * 60000) / 1000).toFixed(1)}s`;
}
function summaryValue(v, contains, timeUnit) {
  if (contains === 'time') {
    if (timeUnit === 'ms') return `${v.toFixed(2)}ms`;
    if (timeUnit === 's') return `${(v / 1000).toFixed(2)}s`;
    return humanTime(v);
  }
  if (contains === 'data') return humanBytes(v);
  return Number.isInteger(v) ? String(v) : v.toFixed(6).replace(/\.?0+$/, '');
}
function metricLine(name, m, stats, timeUnit) {
  const v = m.values || {};
  switch (m.type) {
    case 'counter': {
      const rate = m.contains === 'data' ? `${humanBytes(v.rate)}/s` : `${summaryValue(v.rate, 'default')}/s`;
      return [summaryValue(v.count, m.contains, timeUnit), rate];
    }
    case 'gauge':
      return [summaryValue(v.value, m.contains, timeUnit), `min=${summaryValue(v.min, m.contains, timeUnit)}`, `max=${summaryValue(v.max, m.contains, timeUnit)}`];
    case 'rate':
      return [`${(v.rate * 100).toFixed(2)}%`, `✓ ${v.passes}`, `✗ ${v.fails}`];
    default:
      return stats.filter((s) => v[s] !== undefined)
        .map((s) => `${s}=${s === 'count' ? summaryValue(v[s], 'default') : summaryValue(v[s], m.contains, timeUnit)}`);
  }
}
function textSummary(data, opts) {
  opts = opts || {};
  const indent = opts.indent === undefined ? ' ' : String(opts.indent);
  const color = opts.enableColors === true;
  const paint = (code, t) => (color ? `\x1b[${code}m${t}\x1b[0m` : t);
  const stats = (data.options && data.options.summaryTrendStats) || ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)'];
  const timeUnit = (data.options && data.options.summaryTimeUnit) || '';
  const lines = [];
  const checks = (data.root_group && data.root_group.checks) || [];
  for (const c of checks) {
    const ok = c.fails === 0;
    const mark = ok ? paint(32, '✓') : paint(31, '✗');
    const detail = ok ? '' : `\n${indent}    ↳  ${Math.round((c.passes / Math.max(1, c.passes + c.fails)) * 100)}% — ✓ ${c.passes} / ✗ ${c.fails}`;
    lines.push(`${indent}  ${mark} ${c.name}${detail}`);
  }
  if (checks.length) lines.push('');
  const names = Object.keys(data.metrics || {}).sort();
  const top = names.filter((n) => !n.includes('{'));
  const rows = [];
  for (const name of top) {
    rows.push([name, name, 0]);
    for (const sub of names.filter((n) => n.startsWith(`${name}{`))) rows.push([sub, sub.slice(name.length), 1]);
  }
  const width = Math.max(0, ...rows.map(([, label, depth]) => label.length + depth * 2)) + 3;
  for (const [key, label, depth] of rows) {
    const m = data.metrics[key];
    const failed = m.thresholds && Object.values(m.thresholds).some((t) => t && t.ok === false);
    const mark = m.thresholds ? (failed ? paint(31, '✗') : paint(32, '✓')) : ' ';
    const shown = '  '.repeat(depth) + label;
    const dots = '.'.repeat(Math.max(1, width - shown.length));
    lines.push(`${indent}${mark} ${shown}${paint(90, dots)}: ${metricLine(key, m, stats, timeUnit).join(' ')}`);
  }
  return lines.join('\n') + '\n';
}
function xmlEscape(t) {
  return String(t).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
function jUnit(data, opts) {
  opts = opts || {};
  const cases = [];
  let failures = 0;
  for (const name of Object.keys(data.metrics || {}).sort()) {
    const m = data.metrics[name];
    for (const [expr, t] of Object.entries(m.thresholds || {})) {
      const id = `${name} - ${expr}`;
      if (t.ok) {
        cases.push(`<testcase name="${xmlEscape(id)}" />`);
      } else {
        failures++;
        cases.push(`<testcase name="${xmlEscape(id)}"><failure message="failed" /></testcase>`);
      }
    }
  }
  const suite = xmlEscape(opts.name || 'k6 thresholds');
  const cls = opts.classname ? ` classname="${xmlEscape(opts.classname)}"` : '';
  return `<?xml version="1.0"?>\n<testsuites tests="${cases.length}" failures="${failures}">\n` +
    `<testsuite name="${suite}"${cls} tests="${cases.length}" failures="${failures}">${cases.join('\n')}\n</testsuite>\n</testsuites>\n`;
}
const k6summary = { textSummary, jUnit };

