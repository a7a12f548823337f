// hello.js reading the response's duration and body too: what a lazy read costs.
import http from 'k6/http';
import { check } from 'k6';
const URL = `${(__ENV.BASE_URL || 'http://127.0.0.1:18090').replace(/\/$/, '')}/`;
export const options = { vus: 1, iterations: 1 };
export default function () {
  const res = http.get(URL, { tags: { name: '/' } });
  check(res, { 'fast with a body': (r) => r.timings.duration < 60000 && r.body.length > 0 });
}
