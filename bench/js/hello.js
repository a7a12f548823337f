// The `hello` plugin's scenario as a k6 script: one GET and one check per iteration.
import http from 'k6/http';
import { check } from 'k6';

const URL = `${(__ENV.BASE_URL || 'http://127.0.0.1:18090').replace(/\/$/, '')}/`;

export const options = { vus: 50, duration: '8s' };

export default function () {
  const res = http.get(URL, { tags: { name: '/' } });
  check(res, { 'status is 200': (r) => r.status === 200 });
}
