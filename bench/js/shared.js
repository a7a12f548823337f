// 10,000 records in a SharedArray: computed once, in describe(), held by the host once.
import { SharedArray } from 'k6/data';
import { sleep } from 'k6';

const users = new SharedArray('users', () => JSON.parse(open('./users.json')));

export const options = { vus: 1, duration: '10s' };

export default function () {
  if (users[__ITER % users.length].id < 0) throw new Error('unreachable');
  sleep(1);
}
