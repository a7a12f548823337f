// invoke, for k6: the same description as plugins/invoke (bench/k6-parity/run-b.sh).
// POST /invoke with X-Api-Key at a constant arrival rate; 503s (shed, with Retry-After)
// counted in invoke_shed, their share in invoke_shed_rate.
import http from 'k6/http';
import { check } from 'k6';
import { Counter, Rate } from 'k6/metrics';
import exec from 'k6/execution';

const BASE = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
const shed = new Counter('invoke_shed');
const ok = new Counter('invoke_ok');
const shedRate = new Rate('invoke_shed_rate');

export const options = {
  scenarios: {
    invoke: {
      executor: 'constant-arrival-rate', exec: 'invoke', rate: Number(__ENV.RATE || 300), timeUnit: '1s',
      duration: `${__ENV.DURATION_S || 30}s`, preAllocatedVUs: 20, maxVUs: 100,
    },
  },
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(50)', 'p(95)', 'p(99)'],
  thresholds: { 'http_req_duration{name:/invoke}': ['p(50)>=0'] },
};

http.setResponseCallback(http.expectedStatuses(200, 503));

export function setup() {
  const res = http.post(`${BASE}/invoke`, JSON.stringify({ ping: true }),
    { headers: { 'Content-Type': 'application/json' }, tags: { name: '/invoke' },
      responseCallback: http.expectedStatuses(401) });
  if (res.status !== 401) throw new Error(`POST /invoke without X-Api-Key answered ${res.status}, not 401`);
}

export function invoke() {
  const res = http.post(`${BASE}/invoke`,
    JSON.stringify({ vu: exec.vu.idInTest, iteration: exec.vu.iterationInScenario }),
    { headers: { 'Content-Type': 'application/json', 'X-Api-Key': __ENV.API_KEY || 'demo-key' }, tags: { name: '/invoke' } });
  const wasShed = res.status === 503;
  shedRate.add(wasShed);
  if (wasShed) {
    shed.add(1);
    check(res, { 'shed answers carry Retry-After': (r) => r.headers['Retry-After'] !== undefined });
  } else if (check(res, { 'invoke answers 200': (r) => r.status === 200 })) {
    ok.add(1);
  }
}
