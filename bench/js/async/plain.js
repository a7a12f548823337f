// bench/js/async: the cost of the layer's promise machinery (results/js.md, "Async functions").
export const options = { vus: 1, iterations: 300 };
const id = (x) => x;
export default function () { let s = 0; for (let i = 0; i < 1000; i++) s += id(i); if (s !== 499500) throw new Error('sum'); }
