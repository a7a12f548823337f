// One GET of a prepared request, no check: what a request costs in the layer.
import http from 'k6/http';
const URL = `${(__ENV.BASE_URL || 'http://127.0.0.1:18090').replace(/\/$/, '')}/`;
export const options = { vus: 1, iterations: 1 };
export default function () {
  http.get(URL, { tags: { name: '/' } });
}
