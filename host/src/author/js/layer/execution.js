// ---------------------------------------------------------------- k6/execution

const execution = {
  vu: {
    get idInTest() { return vuNumbers()[VU_ID]; },
    get idInInstance() { return vuNumbers()[VU_ID]; },
    get iterationInInstance() { return vuNumbers()[VU_ITERATION]; },
    get iterationInScenario() { return vuNumbers()[VU_ITERATION]; },
    tags: vuTagsView,
  },
  scenario: {
    get name() { return vuInfo().scenario; },
    // The host answers under a reserved name (host/src/plugin/imports/vu.rs).
    // Outside a scenario (setup, teardown) it is empty, and k6 throws.
    get executor() {
      const executor = hostVu.env('\u0000k6-executor\u0000');
      if (!executor) throw new Error('getting scenario information outside of the VU context is not supported');
      return executor;
    },
    get iterationInTest() { return vuNumbers()[VU_ITERATION_IN_SCENARIO]; },
    get iterationInInstance() { return vuNumbers()[VU_ITERATION_IN_SCENARIO]; },
  },
  instance: {},
  test: {
    abort(msg) {
      // The host stops the run (no new iterations, running ones interrupted); this
      // iteration ends here.
      const why = msg === undefined ? 'test aborted' : String(msg);
      hostRun.abort(why);
      throw new Abort(why);
    },
    options: {},
  },
};

