// rate-limits, for k6: the same description as plugins/rate-limits (bench/k6-parity/run-b.sh).
// The same users from one address (X-Forwarded-For: SHARED_IP), then from an address each
// (10.0.0.N for VU N, as the SDK's vu::fake_ip("10.0.0.0/8") gives), at PACE_MS each;
// 429s counted in http_429 and the rate rate_limited, tagged addresses.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter, Rate } from 'k6/metrics';
import exec from 'k6/execution';

const BASE = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
const PHASE = `${__ENV.PHASE_S || 20}s`;
const VUS = Number(__ENV.VUS || 10);
const PACE = Number(__ENV.PACE_MS || 200) / 1000;
const SHARED_IP = __ENV.SHARED_IP || '198.51.100.7';

const http429 = new Counter('http_429');
const rateLimited = new Rate('rate_limited');

export const options = {
  scenarios: {
    one_address: { executor: 'constant-vus', exec: 'oneAddress', vus: VUS, duration: PHASE },
    per_vu_address: { executor: 'constant-vus', exec: 'perVuAddress', vus: VUS, duration: PHASE, startTime: PHASE },
  },
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(50)', 'p(95)', 'p(99)'],
  thresholds: {
    'http_req_duration{name:/groups/{g}/notes}': ['p(50)>=0'],
    'rate_limited{addresses:per_vu}': ['rate==0'],
  },
};

http.setResponseCallback(http.expectedStatuses(200, 429));

function fakeIp(vu) {
  // The n-th host address of 10.0.0.0/8, as loadtest::vu::fake_ip numbers them.
  return `10.${(vu >> 16) & 255}.${(vu >> 8) & 255}.${vu & 255}`;
}

function count(res, addresses) {
  const limited = res.status === 429;
  rateLimited.add(limited, { addresses });
  if (limited) {
    http429.add(1, { addresses });
    check(res, { '429 carries Retry-After': (r) => r.headers['Retry-After'] !== undefined });
  }
  return limited;
}

let identity = null;

function run(addresses, address) {
  if (identity === null) {
    for (let i = 0; i < 20 && identity === null; i++) {
      const res = http.post(`${BASE}/auth/token`, JSON.stringify({ user: `vu-${exec.vu.idInTest}` }),
        { headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': address }, tags: { name: '/auth/token' } });
      if (count(res, addresses)) { sleep(Number(res.headers['Retry-After'] || 1)); continue; }
      check(res, { 'sign-in status is 200': (r) => r.status === 200 });
      identity = res.json('token');
    }
    if (identity === null) return;
  }
  const group = (exec.vu.iterationInScenario % 10) + 1;
  const res = http.get(`${BASE}/groups/${group}/notes`, {
    headers: { Authorization: `Bearer ${identity}`, 'X-Forwarded-For': address },
    tags: { name: '/groups/{g}/notes' },
  });
  if (!count(res, addresses)) check(res, { 'list status is 200': (r) => r.status === 200 });
  sleep(PACE);
}

export function oneAddress() { run('one', SHARED_IP); }
export function perVuAddress() { run('per_vu', fakeIp(exec.vu.idInTest)); }
