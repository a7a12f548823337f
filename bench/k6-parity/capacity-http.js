// capacity.js's two HTTP iterations (bench/k6-parity/capacity.js) with their sleeps left
// out, for bench/js/instructions.py against demo-target (`DEMO_TARGET_BIN=…`): one
// iteration is one `browse` (a list of 20 notes, `list.json()`, one note, checks) and,
// with ENV="WRITE=1", one `write` instead (POST, `made.json('id')`, PUT, DELETE, checks,
// counters). The same request path per iteration as the scenario's VUs, without the
// think times that would stretch a callgrind run by hours.
import http from 'k6/http';
import { check } from 'k6';
import { Counter } from 'k6/metrics';
import exec from 'k6/execution';
import { BASE, rng } from './common.js';

const notesCreated = new Counter('notes_created');
const notesUpdated = new Counter('notes_updated');
const notesDeleted = new Counter('notes_deleted');
const JSON_HEADERS = { 'Content-Type': 'application/json' };

let token;
function auth() {
  if (!token) {
    const r = http.post(`${BASE}/auth/token`, JSON.stringify({ user: `cap-${exec.vu.idInTest}` }),
      { headers: JSON_HEADERS, tags: { name: '/auth/token' } });
    token = r.json('token');
  }
  return { Authorization: `Bearer ${token}` };
}

function browse() {
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
}

function write() {
  const h = Object.assign({}, JSON_HEADERS, auth());
  const g = 1;
  const made = http.post(`${BASE}/groups/${g}/notes`, JSON.stringify({ title: 'draft', body: 'written by capacity' }),
    { headers: h, tags: { name: '/groups/{g}/notes' } });
  if (!check(made, { 'create status is 201': (x) => x.status === 201 })) return;
  notesCreated.add(1);
  const id = made.json('id');
  const edited = http.put(`${BASE}/groups/${g}/notes/${id}`, JSON.stringify({ title: 'edited', version: 1 }),
    { headers: h, tags: { name: '/groups/{g}/notes/{id}' } });
  if (check(edited, { 'edit status is 200': (x) => x.status === 200 })) notesUpdated.add(1);
  const gone = http.del(`${BASE}/groups/${g}/notes/${id}`, null, { headers: h, tags: { name: '/groups/{g}/notes/{id}' } });
  if (check(gone, { 'delete status is 204': (x) => x.status === 204 })) notesDeleted.add(1);
}

export default __ENV.WRITE ? write : browse;
