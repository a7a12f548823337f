// A VU with some state of the script's: a 64 KiB-ish table made in the init code (as a
// script keeps its users, tokens or payloads), read each iteration.
import { sleep } from 'k6';

const rows = [];
for (let i = 0; i < 1000; i++) rows.push({ id: i, name: `user-${i}`, token: `t${i}`.padEnd(32, 'x') });

export const options = { vus: 1, duration: '10s' };

export default function () {
  if (rows[__ITER % rows.length].id < 0) throw new Error('unreachable');
  sleep(1);
}
