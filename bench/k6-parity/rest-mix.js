// rest-mix, written for k6 from the plugin's description (plugins/rest-mix): one user's
// life per iteration: sign up, PAGES pages THINK_MIN_MS..THINK_MAX_MS apart (browse 5 :
// search 3 : create 2), refreshing the access token before it expires (and once on a
// 401), then delete the account.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import exec from 'k6/execution';
import { BASE, num, endpointThresholds, rng } from './common.js';

const signups = new Counter('signups');
const refreshes = new Counter('refreshes');
const deletions = new Counter('deletions');
const searches = new Counter('searches');
const notesCreated = new Counter('notes_created');
const expired401 = new Counter('expired_401');

const TERMS = ['alpha', 'cache', 'error', 'graph', 'index', 'kernel', 'network', 'pager'];
const JSON_HEADERS = { 'Content-Type': 'application/json' };

export const ENDPOINTS = [
  ['POST', '/accounts'], ['POST', '/auth/refresh'], ['GET', '/groups/{g}/notes'],
  ['GET', '/groups/{g}/notes/{id}'], ['GET', '/groups/{g}/search'], ['POST', '/groups/{g}/notes'],
  ['DELETE', '/accounts/me'],
];

export const options = {
  scenarios: {
    api: {
      executor: 'constant-vus',
      vus: num('VUS', 10),
      duration: __ENV.DURATION || '25s',
      exec: 'apiUser',
    },
  },
  thresholds: endpointThresholds(ENDPOINTS),
};

export function setup() {
  return http.get(`${BASE}/api/config`, { tags: { name: '/api/config' } }).json();
}

function session(pair) {
  return { pair, expires: Date.now() + pair.expires_in * 1000 };
}

function refresh(s) {
  const r = http.post(`${BASE}/auth/refresh`, JSON.stringify({ refresh_token: s.pair.refresh_token }), {
    headers: JSON_HEADERS, tags: { name: '/auth/refresh' },
  });
  if (!check(r, { 'refresh status is 200': (x) => x.status === 200 })) throw new Error(`refresh answered ${r.status}`);
  refreshes.add(1);
  const next = session(r.json());
  s.pair = next.pair;
  s.expires = next.expires;
}

function send(s, make) {
  if (Date.now() + num('REFRESH_MARGIN_MS', 1000) >= s.expires) refresh(s);
  let r = make({ Authorization: `Bearer ${s.pair.access_token}` });
  if (r.status === 401) {
    expired401.add(1);
    refresh(s);
    r = make({ Authorization: `Bearer ${s.pair.access_token}` });
  }
  return r;
}

function pick(list, next) {
  return list.length ? list[next() % list.length] : undefined;
}

export function apiUser(config) {
  const next = rng(exec.vu.idInTest * 7919 + exec.vu.iterationInScenario);
  const user = `k6-${exec.vu.idInTest}-${exec.vu.iterationInScenario}-${next().toString(16)}`;
  const r = http.post(`${BASE}/accounts`, JSON.stringify({ user }), { headers: JSON_HEADERS, tags: { name: '/accounts' } });
  if (!check(r, { 'sign-up status is 201': (x) => x.status === 201 })) return;
  signups.add(1);
  const s = session(r.json());
  const pages = num('PAGES', 10);
  const min = num('THINK_MIN_MS', 2000);
  const max = Math.max(num('THINK_MAX_MS', 4000), min);
  try {
    for (let page = 0; page < pages; page++) {
      if (page > 0) sleep((min + (next() % (max - min + 1))) / 1000);
      const roll = next() % 10;
      if (roll <= 4) {
        const g = pick(config.groups, next) || 1;
        const list = send(s, (h) => http.get(`${BASE}/groups/${g}/notes?limit=20`, { headers: h, tags: { name: '/groups/{g}/notes' } }));
        check(list, { 'list status is 200': (x) => x.status === 200 });
        const notes = list.json() || [];
        if (notes.length) {
          const id = notes[next() % notes.length].id;
          send(s, (h) => http.get(`${BASE}/groups/${g}/notes/${id}`, { headers: h, tags: { name: '/groups/{g}/notes/{id}' } }));
        }
      } else if (roll <= 7) {
        const g = pick(config.large_groups, next) || pick(config.groups, next) || 1;
        const term = TERMS[next() % TERMS.length];
        const found = send(s, (h) => http.get(`${BASE}/groups/${g}/search?q=${term}&limit=20`, { headers: h, tags: { name: '/groups/{g}/search' } }));
        if (check(found, { 'search status is 200': (x) => x.status === 200 })) searches.add(1);
      } else {
        const g = pick(config.groups, next) || 1;
        const made = send(s, (h) => http.post(`${BASE}/groups/${g}/notes`,
          JSON.stringify({ title: 'from rest-mix', body: 'a note written by a REST API user' }),
          { headers: Object.assign({}, JSON_HEADERS, h), tags: { name: '/groups/{g}/notes' } }));
        if (check(made, { 'create status is 201': (x) => x.status === 201 })) notesCreated.add(1);
      }
    }
  } finally {
    const gone = send(s, (h) => http.del(`${BASE}/accounts/me`, null, { headers: h, tags: { name: '/accounts/me' } }));
    if (check(gone, { 'delete status is 204': (x) => x.status === 204 })) deletions.add(1);
  }
}
