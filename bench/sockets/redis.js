// One SET and one GET per iteration with k6's Redis client, run by k6 1.1.0 and by
// `host run` alike (bench/sockets/run.sh). REDIS_URL names the server.
import redis from 'k6/experimental/redis';
import exec from 'k6/execution';

const client = new redis.Client(__ENV.REDIS_URL || 'redis://127.0.0.1:6379');

export const options = {
  scenarios: {
    setget: {
      executor: 'shared-iterations',
      vus: Number(__ENV.VUS || 2),
      iterations: Number(__ENV.ITERATIONS || 1000),
      maxDuration: '10m',
    },
  },
};

export default async function () {
  const key = `bench:js:${exec.vu.idInTest}`;
  const value = `v${exec.scenario.iterationInTest}`;
  await client.set(key, value, 0);
  const got = await client.get(key);
  if (got !== value) {
    throw new Error(`GET ${key}: ${got}, not ${value}`);
  }
}
