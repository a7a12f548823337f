// command-burst, for k6: the same description as plugins/command-burst (bench/k6-parity/run-b.sh).
// Commands at a ramping arrival rate, each followed to done or failed; the submit-to-final
// time in the custom trend command_submit_to_done. Stages come from command-burst.toml's
// shape: STAGE_S seconds at each of 1, 5, 10 and 20 per second.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import exec from 'k6/execution';

const BASE = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
const STAGE = `${__ENV.STAGE_S || 10}s`;
const POLL = Number(__ENV.POLL_MS || 50) / 1000;
const FAIL_EVERY = Number(__ENV.FAIL_EVERY || 20);

const submitToDone = new Trend('command_submit_to_done', true);
const submitted = new Counter('commands_submitted');
const followed = new Counter('commands_followed');

export const options = {
  scenarios: {
    burst: {
      executor: 'ramping-arrival-rate', exec: 'burst', startRate: 1, timeUnit: '1s',
      preAllocatedVUs: 10, maxVUs: 100,
      stages: [
        { duration: STAGE, target: 1 },
        { duration: '1s', target: 5 }, { duration: STAGE, target: 5 },
        { duration: '1s', target: 10 }, { duration: STAGE, target: 10 },
        { duration: '1s', target: 20 }, { duration: STAGE, target: 20 },
      ],
    },
  },
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(50)', 'p(95)', 'p(99)'],
  thresholds: {
    'http_req_duration{name:/commands}': ['p(50)>=0'],
    'http_req_duration{name:/commands/{id}}': ['p(50)>=0'],
    command_submit_to_done: ['p(95)<2000'],
  },
};

// k6 cannot make requests while a VU is created, so each VU signs in on its first iteration.
let token = null;

export function burst() {
  if (token === null) {
    const res = http.post(`${BASE}/auth/token`, JSON.stringify({ user: `vu-${exec.vu.idInTest}` }),
      { headers: { 'Content-Type': 'application/json' }, tags: { name: '/auth/token' } });
    check(res, { 'sign-in status is 200': (r) => r.status === 200 });
    token = res.json('token');
  }
  const auth = { Authorization: `Bearer ${token}` };
  const n = exec.scenario.iterationInTest;
  const group = FAIL_EVERY > 0 && n % FAIL_EVERY === FAIL_EVERY - 1 ? 0 : (n % 10) + 1;
  const started = Date.now();
  const res = http.post(`${BASE}/commands`, JSON.stringify({ kind: 'export', group }),
    { headers: { ...auth, 'Content-Type': 'application/json' }, tags: { name: '/commands' } });
  if (!check(res, { 'submit answers 202': (r) => r.status === 202 })) return;
  const id = res.json('id');
  submitted.add(1);
  for (;;) {
    sleep(POLL);
    const st = http.get(`${BASE}/commands/${id}`, { headers: auth, tags: { name: '/commands/{id}' } });
    if (!check(st, { 'status answers 200': (r) => r.status === 200 })) return;
    const status = st.json('status');
    if (status === 'done' || status === 'failed') {
      submitToDone.add(Date.now() - started, { status });
      followed.add(1, { status });
      return;
    }
    if (Date.now() - started > 30000) return;
  }
}
