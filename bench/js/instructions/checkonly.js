// One check with one condition, no request: what `check` costs.
import { check } from 'k6';
export const options = { vus: 1, iterations: 1 };
export default function () {
  check(1, { 'is one': (v) => v === 1 });
}
