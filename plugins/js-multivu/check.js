// The prototype's own check (by hand, see README.md): per-VU globals and __VU across
// switches, a sleep inside a C callback (forEach), a stack trace after a switch that
// holds only the VU's own frames, a recursion stopped by the VU's own guard, a throw
// after a sleep that fails only that iteration.
var n = 0;
var r = Math.random();
function where() { return new Error('here').stack.split('\n').slice(0, 3).join(' | '); }
function inner() { sleep(0.05); return where(); }
function iteration() {
  n++;
  var before = __VU;
  sleep(0.1 * __VU);
  if (__VU !== before) throw new Error('wrong VU');
  var seen = [];
  [1, 2].forEach(function (x) { sleep(0.01); seen.push(x * __VU); });
  log('vu ' + __VU + ' n ' + n + ' r ' + r.toFixed(6) + ' seen ' + seen.join(','));
  if (n === 2) {
    try { deep(0); } catch (e) { log('vu ' + __VU + ' deep: ' + e.message); }
    log('vu ' + __VU + ' stack: ' + inner());
  }
  if (n === 3 && __VU === 2) throw new Error('thrown after a sleep by VU 2');
}
function deep(i) { return deep(i + 1) + 1; }
