// Start-up: every VU runs one empty iteration; the run's wall time is the cost of
// making the VUs (and stopping them).
export const options = { scenarios: { start: { executor: 'per-vu-iterations', vus: 1000, iterations: 1, maxDuration: '60s' } } };

export default function () {}
