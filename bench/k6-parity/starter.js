// starter, for k6: the same description as plugins/starter (bench/k6-parity/run-b.sh).
// Camunda-style: process instances (asynchronous commands) started at a constant rate,
// in flight bounded by maxVUs; instances_sent apart from instances_received, and
// dropped_iterations when the bound is hit.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import exec from 'k6/execution';

const BASE = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
const POLL = Number(__ENV.POLL_MS || 100) / 1000;
const sent = new Counter('instances_sent');
const received = new Counter('instances_received');
const duration = new Trend('instance_duration', true);

export const options = {
  scenarios: {
    start: {
      executor: 'constant-arrival-rate', exec: 'start', rate: Number(__ENV.RATE || 50), timeUnit: '1s',
      duration: `${__ENV.DURATION_S || 60}s`, preAllocatedVUs: 20, maxVUs: Number(__ENV.MAX_VUS || 100),
    },
  },
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(50)', 'p(95)', 'p(99)'],
  thresholds: {
    'http_req_duration{name:/commands}': ['p(50)>=0'],
    'http_req_duration{name:/commands/{id}}': ['p(50)>=0'],
    instance_duration: ['p(99)<1000'],
  },
};

let token = null;

export function start() {
  if (token === null) {
    const res = http.post(`${BASE}/auth/token`, JSON.stringify({ user: `starter-${exec.vu.idInTest}` }),
      { headers: { 'Content-Type': 'application/json' }, tags: { name: '/auth/token' } });
    check(res, { 'sign-in status is 200': (r) => r.status === 200 });
    token = res.json('token');
  }
  const auth = { Authorization: `Bearer ${token}` };
  const group = (exec.scenario.iterationInTest % 10) + 1;
  const started = Date.now();
  const res = http.post(`${BASE}/commands`, JSON.stringify({ kind: 'export', group }),
    { headers: { ...auth, 'Content-Type': 'application/json' }, tags: { name: '/commands' } });
  if (!check(res, { 'instance started (202)': (r) => r.status === 202 })) return;
  const id = res.json('id');
  sent.add(1);
  while (Date.now() - started < 30000) {
    sleep(POLL);
    const st = http.get(`${BASE}/commands/${id}`, { headers: auth, tags: { name: '/commands/{id}' } });
    if (st.status !== 200) { check(st, { 'instance visible (200)': () => false }); return; }
    const status = st.json('status');
    if (status === 'done' || status === 'failed') {
      received.add(1, { status });
      duration.add(Date.now() - started, { status });
      check(st, { 'instance completed': () => status === 'done' });
      return;
    }
  }
  check(null, { 'instance completed': () => false });
}
