// capacity, written for k6 from the plugin's description (plugins/capacity): readers
// browse (list, open, think 1-3 s), editors create, edit and delete a note with
// PAUSE_MIN_MS..PAUSE_MAX_MS after each step, and live views hold a WebSocket.
// k6's WebSocket (k6/ws) lives inside one iteration, so a `sockets` VU holds its socket
// for the whole scenario in one long iteration, where the plugin keeps it across short
// ones: the same sockets for the same time.
//
// The pauses are pseudo-random but the same in every run and under every tool: each VU
// seeds them with its slot in its scenario (see `pauses`), not with exec.vu.idInTest,
// whose values differ between tools and between k6's runs; the editors' changes, and so
// the pushes, follow from them.
// LEAD_MS (default 0) starts readers and editors that long after the sockets, so every
// socket is subscribed before the first change; with HOLD_MS = LEAD_MS + DURATION + a
// tail longer than an editor's last iteration (~5 s), every change reaches every socket
// and WebSocket messages = 200 subscription answers + changes x sockets, whatever the
// tool's start-up speed. PACED=1 (default 0) measures each pause from when it was due
// rather than from the step's response (see `pause`), so how many steps fit in the
// DURATION does not hang on the tool's or the machine's latency.
// bench/k6-parity/capacity_ab.py runs it with all three; without LEAD_MS and PACED the
// load is the seed's as before, the pauses only drawn from other seeds.
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
const LEAD = `${num('LEAD_MS', 0)}ms`;

export const ENDPOINTS = [
  ['GET', '/groups/{g}/notes'], ['GET', '/groups/{g}/notes/{id}'], ['POST', '/groups/{g}/notes'],
  ['PUT', '/groups/{g}/notes/{id}'], ['DELETE', '/groups/{g}/notes/{id}'], ['POST', '/auth/token'],
];

export const options = {
  scenarios: {
    browse: { executor: 'constant-vus', vus: num('BROWSE_VUS', 20), duration: DURATION, exec: 'browse', startTime: LEAD },
    write: { executor: 'constant-vus', vus: num('WRITE_VUS', 5), duration: DURATION, exec: 'write', startTime: LEAD },
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

// This iteration's pause sequence, seeded with (the VU's slot + 1) x 7919 + its
// iteration. The slot is exec.scenario.iterationInTest on the VU's first iteration:
// 0..VUs-1 in a constant-vus scenario, whose VUs all begin at its start and none of
// which ends an iteration (>= 1 s of pauses) before the others have begun theirs.
// exec.vu.idInTest would not do: k6 hands initialised VUs to its scenarios from one
// pool in whichever order its executors ask (the editors got ids within 1-21 in 15 of
// 20 runs of k6 1.1.0, and about 81-100, 283-300 or mixes in the others;
// results/js.md, branch count53), while the host numbers them in the scenarios' name
// order (editors 281-300), and which 20 seeds the editors draw moves their changes in
// 30 s by ~5 % (645 for ids 1-20, 615 for 281-300). Slot + 1 gives the seeds k6's
// usual ids 1-20 (readers 1-80).
let slot = -1;
let due = 0; // PACED: when the VU's current pause ends, from its first iteration's start
function pauses() {
  if (slot < 0) {
    slot = exec.scenario.iterationInTest;
    due = Date.now();
  }
  return rng((slot + 1) * 7919 + exec.vu.iterationInScenario);
}

// Pauses `ms`: from now, or with PACED=1 from when the previous pause ended, so a slow
// response shortens the pause after it (a VU behind its schedule does not pause).
const PACED = num('PACED', 0) > 0;
function pause(ms) {
  if (!PACED) {
    sleep(ms / 1000);
    return;
  }
  due += ms;
  const left = due - Date.now();
  if (left > 0) sleep(left / 1000);
}

export function browse() {
  const next = pauses();
  const h = auth();
  const g = (next() % 10) + 1;
  const list = http.get(`${BASE}/groups/${g}/notes?limit=20`, { headers: h, tags: { name: '/groups/{g}/notes' } });
  check(list, { 'list status is 200': (x) => x.status === 200 });
  const notes = list.json() || [];
  if (notes.length) {
    const id = notes[next() % notes.length].id;
    const r = http.get(`${BASE}/groups/${g}/notes/${id}`, { headers: h, tags: { name: '/groups/{g}/notes/{id}' } });
    check(r, { 'note status is 200': (x) => x.status === 200 });
  }
  pause(1000 + (next() % 2001));
}

export function write() {
  const next = pauses();
  const h = Object.assign({}, JSON_HEADERS, auth());
  const min = num('PAUSE_MIN_MS', 500);
  const max = Math.max(num('PAUSE_MAX_MS', 1500), min);
  const step = () => pause(min + (next() % (max - min + 1)));
  const g = num('GROUP', 1);
  const made = http.post(`${BASE}/groups/${g}/notes`, JSON.stringify({ title: 'draft', body: 'written by capacity' }),
    { headers: h, tags: { name: '/groups/{g}/notes' } });
  if (!check(made, { 'create status is 201': (x) => x.status === 201 })) return;
  notesCreated.add(1);
  const id = made.json('id');
  step();
  const edited = http.put(`${BASE}/groups/${g}/notes/${id}`, JSON.stringify({ title: 'edited', version: 1 }),
    { headers: h, tags: { name: '/groups/{g}/notes/{id}' } });
  if (check(edited, { 'edit status is 200': (x) => x.status === 200 })) notesUpdated.add(1);
  step();
  const gone = http.del(`${BASE}/groups/${g}/notes/${id}`, null, { headers: h, tags: { name: '/groups/{g}/notes/{id}' } });
  if (check(gone, { 'delete status is 204': (x) => x.status === 204 })) notesDeleted.add(1);
  step();
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
