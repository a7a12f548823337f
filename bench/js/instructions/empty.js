// An empty iteration: the export call and the layer's iteration wrapper only.
export const options = { vus: 1, iterations: 1 };
export default function () {}
