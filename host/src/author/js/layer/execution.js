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

