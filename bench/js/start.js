// Start-up: every VU runs one empty iteration; the run's wall time is the cost of
// making the VUs (and stopping them). `-e VUS=10000` for issue #53's 10,000 VUs.
export const options = { scenarios: { start: { executor: 'per-vu-iterations', vus: Number(__ENV.VUS || 1000), iterations: 1, maxDuration: '60s' } } };

export default function () {}
