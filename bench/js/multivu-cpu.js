// The multi-VU prototype's CPU check (issue #53): what Asyncify's instrumentation costs
// the interpreter, no waits: objects, strings, JSON, a sum.
function iteration() {
  var o = [];
  for (var i = 0; i < 200; i++) o.push({ id: i, name: 'item' + i });
  var p = JSON.parse(JSON.stringify(o));
  var t = 0;
  for (var j = 0; j < p.length; j++) t += p[j].id;
  if (t !== 19900) throw new Error('sum ' + t);
}
