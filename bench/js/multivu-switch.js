// The multi-VU prototype's switch cost (issue #53): 100 `sleep(0)` per iteration, each an
// unwind, a return to the driver and a rewind.
function iteration() {
  for (var i = 0; i < 100; i++) sleep(0);
}
