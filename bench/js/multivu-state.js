// The multi-VU prototype's form of state.js (issue #53): the same 1,000-row table made
// in each VU's init code, read each iteration.
const rows = [];
for (let i = 0; i < 1000; i++) rows.push({ id: i, name: `user-${i}`, token: `t${i}`.padEnd(32, 'x') });
let iter = 0;

function iteration() {
  if (rows[iter++ % rows.length].id < 0) throw new Error('unreachable');
  sleep(1);
}
