// A VU that only sleeps: what a VU costs with no state of the script's.
import { sleep } from 'k6';

export const options = { vus: 1, duration: '10s' };

export default function () {
  sleep(1);
}
