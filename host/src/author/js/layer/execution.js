// ---------------------------------------------------------------- k6/execution

// The live numbers (`exec.instance`, `exec.scenario.startTime/progress`): one JSON
// object the host computes when asked under a reserved name (host/src/plugin/
// exec_live.rs), once per read, so nothing is counted for scripts that never read them.
// k6 1.1.0 throws in teardown too (its execution state is not in teardown's context).
function execLive() {
  if (inInitCode || phase === 'teardown') throw new Error('getting instance information in the init context is not supported');
  return JSON.parse(hostVu.env('\u0000k6-execution\u0000'));
}
function scenarioLive(field) {
  const live = phase === 'iteration' ? execLive() : {};
  if (live[field] === undefined) throw new Error('getting scenario information outside of the VU context is not supported');
  return live[field];
}

// k6's `exec.test.options`: the options, deeply frozen, with the shortcuts (vus,
// iterations, duration, stages) folded into `scenarios.default` as k6's consolidation
// does. Made once per VU, on first read.
let testOptions = null;
function deepFreeze(o) {
  if (o !== null && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const k of Object.keys(o)) deepFreeze(o[k]);
  }
  return o;
}
function consolidatedOptions() {
  const o = JSON.parse(JSON.stringify(runOptions));
  if (!o.scenarios) {
    // k6's DeriveScenariosFromShortcuts: unset numbers stay null, as there.
    const vus = o.vus === undefined ? null : o.vus;
    let s;
    if (o.stages) s = { executor: 'ramping-vus', startVUs: vus, stages: o.stages };
    else if (o.iterations !== undefined) s = { executor: 'shared-iterations', vus, iterations: o.iterations, maxDuration: o.duration === undefined ? null : o.duration };
    else if (o.duration !== undefined) s = { executor: 'constant-vus', vus, duration: o.duration };
    else s = { executor: 'per-vu-iterations', vus, iterations: null, maxDuration: null };
    o.scenarios = { default: s };
  }
  for (const k of ['vus', 'iterations', 'duration', 'stages']) delete o[k];
  if (o.consoleOutput === undefined) o.consoleOutput = null;
  if (o.localIPs === undefined) o.localIPs = null;
  return deepFreeze(o);
}

// exec.vu.metrics.metadata: the VU's sample metadata (k6 >= 0.41). Kept per VU, as
// k6's; the host's outputs carry no metadata, so it reaches no sample.
const vuMetadata = {};

const execution = {
  vu: {
    get idInTest() { return vuNumbers()[VU_ID]; },
    get idInInstance() { return vuNumbers()[VU_ID]; },
    get iterationInInstance() { return vuNumbers()[VU_ITERATION]; },
    get iterationInScenario() { return vuNumbers()[VU_ITERATION]; },
    tags: vuTagsView,
    metrics: { tags: vuTagsView, metadata: vuMetadata },
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
    // Unix ms when the scenario started (the run's start plus its startTime).
    get startTime() { return scenarioLive('startTime'); },
    // 0..1: iterations done / total, or time spent / duration (host/src/plugin/exec_live.rs).
    get progress() { return scenarioLive('progress'); },
  },
  // This process's numbers (under an execution segment: this instance's, as k6's).
  instance: {
    get currentTestRunDuration() { return execLive().currentTestRunDuration; },
    get iterationsCompleted() { return execLive().iterationsCompleted; },
    get iterationsInterrupted() { return execLive().iterationsInterrupted; },
    get vusActive() { return execLive().vusActive; },
    get vusInitialized() { return execLive().vusInitialized; },
  },
  test: {
    abort(msg) {
      // The host stops the run (no new iterations, running ones interrupted); this
      // iteration ends here.
      const why = msg === undefined ? 'test aborted' : String(msg);
      hostRun.abort(why);
      throw new Abort(why);
    },
    get options() {
      if (inInitCode) throw new Error('getting test options in the init context is not supported');
      if (testOptions === null) testOptions = consolidatedOptions();
      return testOptions;
    },
  },
};

