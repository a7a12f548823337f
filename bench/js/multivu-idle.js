// The multi-VU prototype's idle VU (issue #53): the same work as idle.js, in the
// prototype's script form (a global `iteration`, `sleep` a global).
function iteration() {
  sleep(1);
}
