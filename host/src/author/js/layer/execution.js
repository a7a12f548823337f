// ---------------------------------------------------------------- k6/execution

const execution = {
  vu: {
    get idInTest() { return vuInfo().vuId; },
    get idInInstance() { return vuInfo().vuId; },
    get iterationInInstance() { return vuInfo().iteration; },
    get iterationInScenario() { return vuInfo().iteration; },
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
    get iterationInTest() { return vuInfo().iterationInScenario; },
    get iterationInInstance() { return vuInfo().iterationInScenario; },
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

