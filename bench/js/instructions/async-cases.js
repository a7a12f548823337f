// The per-iteration costs behind bench/sockets/redis.js, one case per run (`-e CASE=`),
// in one script so that one component (and one native compile under valgrind) serves
// every case: `empty` (the wrapper alone), `async` (an empty `async` iteration: the
// driver of rewritten async functions, layer/async.js), `awaits` (two awaits of
// settled layer promises, as redis.js awaits its replies), `exec` (the VU's numbers as
// redis.js reads them: `exec.vu.idInTest`, `exec.scenario.iterationInTest`).
import exec from 'k6/execution';

export const options = { vus: 1, iterations: 1 };

const settled = Promise.resolve(1);
const cases = {
  empty() {},
  async: async () => {},
  awaits: async () => {
    await settled;
    await settled;
  },
  exec() {
    const key = `bench:js:${exec.vu.idInTest}`;
    const value = `v${exec.scenario.iterationInTest}`;
    if (key.length + value.length === 0) throw new Error('empty');
  },
};
const run = cases[__ENV.CASE || 'empty'];

export default function () {
  return run();
}
