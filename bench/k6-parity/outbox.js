// outbox, for k6: the same description as plugins/outbox (bench/k6-parity/run-b.sh).
// POST /events at N a minute; teardown polls GET /events until nothing is pending and
// records the wait in outbox_drain_time.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter, Trend, Gauge } from 'k6/metrics';
import exec from 'k6/execution';

const BASE = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
const sent = new Counter('outbox_events_sent');
const drain = new Trend('outbox_drain_time', true);
const pendingAfterLoad = new Gauge('outbox_pending_after_load');

export const options = {
  scenarios: {
    events: {
      executor: 'constant-arrival-rate', exec: 'events', rate: Number(__ENV.RATE_PER_MIN || 9000), timeUnit: '1m',
      duration: `${__ENV.DURATION_S || 30}s`, preAllocatedVUs: 10, maxVUs: 50,
    },
  },
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(50)', 'p(95)', 'p(99)'],
  thresholds: { 'http_req_duration{name:/events}': ['p(50)>=0'], outbox_drain_time: ['max<60000'] },
};

export function events() {
  const res = http.post(`${BASE}/events`,
    JSON.stringify({ type: 'order.created', vu: exec.vu.idInTest, iteration: exec.vu.iterationInScenario }),
    { headers: { 'Content-Type': 'application/json' }, tags: { name: '/events' } });
  if (check(res, { 'event accepted (202)': (r) => r.status === 202 })) sent.add(1);
}

export function teardown() {
  const began = Date.now();
  let counts = http.get(`${BASE}/events`, { tags: { name: 'GET /events' } }).json();
  pendingAfterLoad.add(counts.pending);
  while (counts.pending > 0 && Date.now() - began < 120000) {
    sleep(0.1);
    counts = http.get(`${BASE}/events`, { tags: { name: 'GET /events' } }).json();
  }
  drain.add(Date.now() - began);
  console.log(`outbox drained in ${Date.now() - began} ms (${counts.received} webhooks received and verified)`);
}
