// The same 10,000 records parsed in every VU (what SharedArray did before it was shared).
import { sleep } from 'k6';

const users = JSON.parse(open('./users.json'));

export const options = { vus: 1, duration: '10s' };

export default function () {
  if (users[__ITER % users.length].id < 0) throw new Error('unreachable');
  sleep(1);
}
