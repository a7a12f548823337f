// The `sockets` plugin's scenario for k6 (bench/websockets-k6.sh): each listener VU
// signs in, opens TABS sockets to the demo target's `GET /ws`, subscribes each to
// GROUP and keeps them until LISTEN_S after the start, counting the note pushes they
// receive (`pushes_received`); one writer VU creates and deletes a note every WRITE_MS
// from RAMP_S to RAMP_S + HOLD_S, summing the target's X-Live-Recipients answers
// (`pushes_expected`). Counts are added once per socket at its close, as the plugin
// adds once per drain, not once per message.
import http from 'k6/http';
import { WebSocket } from 'k6/experimental/websockets';
import { Counter } from 'k6/metrics';
import exec from 'k6/execution';
import { setTimeout } from 'k6/timers';
import { sleep } from 'k6';

const BASE = (__ENV.BASE_URL || 'http://127.0.0.1:18080').replace(/\/$/, '');
const VUS = parseInt(__ENV.VUS || '50');
const TABS = parseInt(__ENV.TABS || '20');
const GROUP = parseInt(__ENV.GROUP || '1');
const RAMP_S = parseInt(__ENV.RAMP_S || '20');
const HOLD_S = parseInt(__ENV.HOLD_S || '60');
const LISTEN_S = RAMP_S + HOLD_S + 10;
const WRITE_MS = parseInt(__ENV.WRITE_MS || '1000');

const pushesReceived = new Counter('pushes_received');
const pushesExpected = new Counter('pushes_expected');
const tabsOpened = new Counter('tabs_opened');
const tabErrors = new Counter('tab_errors');

export const options = {
  scenarios: {
    listeners: {
      executor: 'per-vu-iterations',
      vus: VUS,
      iterations: 1,
      maxDuration: `${LISTEN_S + 30}s`,
      exec: 'listeners',
    },
    ...(TABS > 0
      ? {
          writer: {
            executor: 'constant-vus',
            vus: 1,
            startTime: `${RAMP_S}s`,
            duration: `${HOLD_S}s`,
            exec: 'writer',
          },
        }
      : {}),
  },
  setupTimeout: '30s',
};

function signIn(user) {
  const res = http.post(`${BASE}/auth/token`, JSON.stringify({ user }), {
    headers: { 'Content-Type': 'application/json' },
    tags: { name: '/auth/token' },
  });
  if (res.status !== 200) {
    throw new Error(`sign-in as ${user} answered ${res.status}`);
  }
  return res.json('token');
}

export function listeners() {
  const token = signIn(`vu-${exec.vu.idInTest}`);
  // Every socket closes LISTEN_S after the test's start, wherever the VU is.
  const closeIn = Math.max(1000, LISTEN_S * 1000 - (Date.now() - exec.scenario.startTime));
  const url = `${BASE.replace(/^http/, 'ws')}/ws?token=${token}`;
  for (let i = 0; i < TABS; i++) {
    const ws = new WebSocket(url);
    let pushes = 0;
    ws.onopen = () => {
      tabsOpened.add(1);
      ws.send(JSON.stringify({ subscribe: [GROUP] }));
    };
    ws.onmessage = (e) => {
      if (typeof e.data === 'string' && e.data.indexOf('"type":"note.') >= 0) {
        pushes++;
      }
    };
    ws.onerror = (e) => {
      tabErrors.add(1);
      console.error(`tab ${i}: ${e.error}`);
    };
    ws.onclose = () => {
      if (pushes > 0) pushesReceived.add(pushes);
    };
    setTimeout(() => ws.close(), closeIn);
  }
  if (TABS === 0) {
    sleep(closeIn / 1000);
  }
}

function recipients(res) {
  return parseInt(res.headers['X-Live-Recipients'] || '0');
}

let writerToken;

export function writer() {
  const started = Date.now();
  try {
    change();
  } finally {
    // The pace holds when a write fails, so a failing target is not hammered.
    const rest = WRITE_MS - (Date.now() - started);
    if (rest > 0) sleep(rest / 1000);
  }
}

function change() {
  if (!writerToken) writerToken = signIn(`writer-${exec.vu.idInTest}`);
  const auth = { headers: { Authorization: `Bearer ${writerToken}`, 'Content-Type': 'application/json' } };
  const res = http.post(
    `${BASE}/groups/${GROUP}/notes`,
    JSON.stringify({ title: `live ${exec.vu.iterationInScenario}`, body: 'written by the sockets scenario' }),
    Object.assign({ tags: { name: '/groups/{g}/notes' } }, auth),
  );
  if (res.status === 201) {
    pushesExpected.add(recipients(res));
    const del = http.del(
      `${BASE}/groups/${GROUP}/notes/${res.json('id')}`,
      null,
      Object.assign({ tags: { name: '/groups/{g}/notes/{id}' } }, auth),
    );
    if (del.status === 204) pushesExpected.add(recipients(del));
  }
}
