// demo-visitor, written for k6 from the plugin's description (plugins/demo-visitor):
// a first visit with an empty cache (GET /app, its assets as one batch, the app
// shell's calls), then a live view over a WebSocket for LIVE_MS with an app ping every
// PING_MS and an inbox poll every INBOX_MS; then the next visitor.
import http from 'k6/http';
import ws from 'k6/ws';
import { check } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import exec from 'k6/execution';
import { BASE, WS_BASE, num, endpointThresholds } from './common.js';

const visits = new Counter('visits');
const assetsLoaded = new Counter('assets_loaded');
const assetBytes = new Counter('asset_bytes');
const appPings = new Counter('app_pings');
const appPongs = new Counter('app_pongs');
const inboxPolls = new Counter('inbox_polls');
const pageLoad = new Trend('page_load_ms', true);
const firstVisit = new Trend('first_visit_ms', true);

export const ENDPOINTS = [
  ['GET', '/app'], ['GET', '/assets/*'], ['POST', '/auth/token'], ['GET', '/api/config'],
  ['GET', '/api/me'], ['GET', '/groups/{g}/notes'], ['GET', '/inbox'],
];

export const options = {
  scenarios: {
    visitors: {
      executor: 'constant-vus',
      vus: num('VUS', 10),
      duration: __ENV.DURATION || '25s',
      exec: 'visit',
    },
  },
  thresholds: endpointThresholds(ENDPOINTS),
  // k6's defaults, as the host's `[http] batch` and `batch_per_host` are: at most 20
  // requests of a batch at once, 6 to one host, as a browser over HTTP/1.1.
  batch: 20,
  batchPerHost: 6,
};

export function visit() {
  const started = Date.now();
  visits.add(1);
  const page = http.get(`${BASE}/app`, { tags: { name: '/app' } });
  check(page, { 'page status is 200': (r) => r.status === 200 });
  const paths = [...new Set((page.body || '').match(/\/assets\/[^"]+/g) || [])];
  const responses = http.batch(paths.map((p) => ['GET', `${BASE}${p}`, null, { tags: { name: '/assets/*' } }]));
  let loaded = 0;
  let bytes = 0;
  for (const r of responses) {
    if (r.status === 200) { loaded += 1; bytes += r.body.length; }
  }
  assetsLoaded.add(loaded);
  assetBytes.add(bytes);
  check(null, { 'every asset loaded': () => loaded === paths.length });
  pageLoad.add(Date.now() - started);

  const user = `visitor-${exec.vu.idInTest}-${exec.vu.iterationInScenario}`;
  const signIn = http.post(`${BASE}/auth/token`, JSON.stringify({ user }), {
    headers: { 'Content-Type': 'application/json' }, tags: { name: '/auth/token' },
  });
  check(signIn, { 'sign-in status is 200': (r) => r.status === 200 });
  const token = signIn.json('token');
  const auth = { Authorization: `Bearer ${token}` };
  http.get(`${BASE}/api/config`, { tags: { name: '/api/config' } });
  http.get(`${BASE}/api/me`, { headers: auth, tags: { name: '/api/me' } });
  http.get(`${BASE}/groups/1/notes?limit=20`, { headers: auth, tags: { name: '/groups/{g}/notes' } });
  firstVisit.add(Date.now() - started);

  let pings = 0;
  let pongs = 0;
  let polls = 0;
  ws.connect(`${WS_BASE}/ws?token=${token}`, { tags: { name: '/ws' } }, (socket) => {
    socket.on('open', () => {
      socket.send('{"subscribe": [1]}');
      socket.setInterval(() => { pings += 1; socket.send(`{"ping": ${pings}}`); }, num('PING_MS', 5000));
      socket.setInterval(() => {
        const r = http.get(`${BASE}/inbox`, { headers: auth, tags: { name: '/inbox' } });
        if (check(r, { 'inbox status is 200': (x) => x.status === 200 })) polls += 1;
      }, num('INBOX_MS', 10000));
      socket.setTimeout(() => socket.close(), num('LIVE_MS', 20000));
    });
    socket.on('message', (text) => {
      if (text.indexOf('"pong"') >= 0) pongs += 1;
    });
  });
  appPings.add(pings);
  appPongs.add(pongs);
  inboxPolls.add(polls);
}
