// bench/js/async: the cost of the layer's promise machinery (results/js.md, "Async functions").
export const options = { vus: 1, iterations: 300 };
export default function () { let p = Promise.resolve(0); for (let i = 0; i < 1000; i++) p = p.then((v) => v + i); return p.then((s) => { if (s !== 499500) throw new Error('sum'); }); }
