// capacity, written for k6 from the plugin's description (plugins/capacity): readers
// browse (list, open, think 1-3 s), editors create, edit and delete a note with
// PAUSE_MIN_MS..PAUSE_MAX_MS after each step, and live views hold a WebSocket.
// k6's WebSocket (k6/ws) lives inside one iteration, so a `sockets` VU holds its socket
// for the whole scenario in one long iteration, where the plugin keeps it across short
// ones: the same sockets for the same time.
import http from 'k6/http';
import ws from 'k6/ws';
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import exec from 'k6/execution';
import { BASE, WS_BASE, num, endpointThresholds, rng } from './common.js';

const notesCreated = new Counter('notes_created');
const notesUpdated = new Counter('notes_updated');
const notesDeleted = new Counter('notes_deleted');
const pushesReceived = new Counter('pushes_received');
const socketsOpened = new Counter('sockets_opened');
const JSON_HEADERS = { 'Content-Type': 'application/json' };
const DURATION = __ENV.DURATION || '25s';

export const ENDPOINTS = [
  ['GET', '/groups/{g}/notes'], ['GET', '/groups/{g}/notes/{id}'], ['POST', '/groups/{g}/notes'],
  ['PUT', '/groups/{g}/notes/{id}'], ['DELETE', '/groups/{g}/notes/{id}'],
];

export const options = {
  scenarios: {
    browse: { executor: 'constant-vus', vus: num('BROWSE_VUS', 20), duration: DURATION, exec: 'browse' },
    write: { executor: 'constant-vus', vus: num('WRITE_VUS', 5), duration: DURATION, exec: 'write' },
    sockets: { executor: 'constant-vus', vus: num('SOCKET_VUS', 20), duration: DURATION, exec: 'sockets' },
  },
  thresholds: endpointThresholds(ENDPOINTS),
};

// One sign-in per VU, as the plugin's init does.
let token;
function auth() {
  if (!token) {
    const r = http.post(`${BASE}/auth/token`, JSON.stringify({ user: `cap-${exec.vu.idInTest}` }),
      { headers: JSON_HEADERS, tags: { name: '/auth/token' } });
    token = r.json('token');
  }
  return { Authorization: `Bearer ${token}` };
}

export function browse() {
  const h = auth();
  const next = rng(exec.vu.idInTest * 7919 + exec.vu.iterationInScenario);
  const g = (next() % 10) + 1;
  const list = http.get(`${BASE}/groups/${g}/notes?limit=20`, { headers: h, tags: { name: '/groups/{g}/notes' } });
  check(list, { 'list status is 200': (x) => x.status === 200 });
  const notes = list.json() || [];
  if (notes.length) {
    const id = notes[next() % notes.length].id;
    const r = http.get(`${BASE}/groups/${g}/notes/${id}`, { headers: h, tags: { name: '/groups/{g}/notes/{id}' } });
    check(r, { 'note status is 200': (x) => x.status === 200 });
  }
  sleep((1000 + (next() % 2001)) / 1000);
}

export function write() {
  const h = Object.assign({}, JSON_HEADERS, auth());
  const next = rng(exec.vu.idInTest * 7919 + exec.vu.iterationInScenario);
  const min = num('PAUSE_MIN_MS', 500);
  const max = Math.max(num('PAUSE_MAX_MS', 1500), min);
  const pause = () => sleep((min + (next() % (max - min + 1))) / 1000);
  const g = num('GROUP', 1);
  const made = http.post(`${BASE}/groups/${g}/notes`, JSON.stringify({ title: 'draft', body: 'written by capacity' }),
    { headers: h, tags: { name: '/groups/{g}/notes' } });
  if (!check(made, { 'create status is 201': (x) => x.status === 201 })) return;
  notesCreated.add(1);
  const id = made.json('id');
  pause();
  const edited = http.put(`${BASE}/groups/${g}/notes/${id}`, JSON.stringify({ title: 'edited', version: 1 }),
    { headers: h, tags: { name: '/groups/{g}/notes/{id}' } });
  if (check(edited, { 'edit status is 200': (x) => x.status === 200 })) notesUpdated.add(1);
  pause();
  const gone = http.del(`${BASE}/groups/${g}/notes/${id}`, null, { headers: h, tags: { name: '/groups/{g}/notes/{id}' } });
  if (check(gone, { 'delete status is 204': (x) => x.status === 204 })) notesDeleted.add(1);
  pause();
}

export function sockets() {
  auth();
  const holdMs = num('HOLD_MS', 25000);
  ws.connect(`${WS_BASE}/ws?token=${token}`, { tags: { name: '/ws' } }, (socket) => {
    socket.on('open', () => {
      socketsOpened.add(1);
      socket.send(`{"subscribe": [${num('GROUP', 1)}]}`);
      socket.setTimeout(() => socket.close(), holdMs);
    });
    socket.on('message', (text) => {
      if (text.indexOf('"note.') >= 0) pushesReceived.add(1);
    });
  });
}
