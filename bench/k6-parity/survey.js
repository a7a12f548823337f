// survey, for k6: the same description as plugins/survey (bench/k6-parity/run-b.sh).
// At a constant arrival rate: form sign-in (the 302 and its cookie, redirects: 0), the
// survey page (CSRF token in the form, single-use token in a JSON script tag), one
// answer (200), the same answer again (409: survey_conflicts; a 200 would be a replay
// accepted). Dropped iterations are k6's dropped_iterations.
import http from 'k6/http';
import { check } from 'k6';
import { parseHTML } from 'k6/html';
import { Counter } from 'k6/metrics';
import exec from 'k6/execution';

const BASE = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
const accepted = new Counter('survey_answers_accepted');
const conflicts = new Counter('survey_conflicts');
const replaysAccepted = new Counter('survey_replays_accepted');

export const options = {
  scenarios: {
    answer: {
      executor: 'constant-arrival-rate', exec: 'answer', rate: Number(__ENV.RATE || 10), timeUnit: '1s',
      duration: `${__ENV.DURATION_S || 60}s`, preAllocatedVUs: 10, maxVUs: 50,
    },
  },
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(50)', 'p(95)', 'p(99)'],
  thresholds: {
    'http_req_duration{name:/survey/login}': ['p(50)>=0'],
    'http_req_duration{name:/survey}': ['p(50)>=0'],
    'http_req_duration{name:/survey/answer}': ['p(50)>=0'],
  },
};

export function answer() {
  const login = http.post(`${BASE}/survey/login`, { user: `vu-${exec.vu.idInTest}`, password: 'demo' },
    { redirects: 0, tags: { name: '/survey/login' } });
  check(login, { 'login answers 302 to /survey': (r) => r.status === 302 && r.headers.Location === '/survey' });
  const page = http.get(`${BASE}/survey`, { tags: { name: '/survey' } });
  if (!check(page, { 'the jar sends the session cookie': (r) => r.status === 200 })) return;
  const doc = parseHTML(page.body);
  const csrf = doc.find('input[name=csrf]').attr('value');
  const token = JSON.parse(doc.find('script#survey-data').text()).token;
  const form = { csrf, token, answer: String((exec.vu.iterationInScenario % 5) + 1) };
  const first = http.post(`${BASE}/survey/answer`, form, { tags: { name: '/survey/answer' } });
  if (check(first, { 'answer accepted': (r) => r.status === 200 })) accepted.add(1);
  const replay = http.post(`${BASE}/survey/answer`, form,
    { tags: { name: '/survey/answer' }, responseCallback: http.expectedStatuses(409) });
  if (check(replay, { 'replayed token refused': (r) => r.status === 409 })) conflicts.add(1);
  if (replay.status === 200) replaysAccepted.add(1);
}
