// A VU with a few objects of state (issue #53): a config object, ten users, a Map of
// their tokens and a counter, made in the init code and read each iteration.
import { sleep } from 'k6';

const config = { base: 'http://127.0.0.1:8080', timeoutMs: 5000, tags: { team: 'web', env: 'test' } };
const users = [];
for (let i = 0; i < 10; i++) users.push({ id: i, name: `user-${i}`, token: `t${i}`.padEnd(32, 'x') });
const tokens = new Map(users.map((u) => [u.name, u.token]));
let seen = 0;

export const options = { vus: 1, duration: '10s' };

export default function () {
  const u = users[seen++ % users.length];
  if (!tokens.has(u.name) || config.timeoutMs < 0) throw new Error('unreachable');
  sleep(1);
}
