// ---------------------------------------------------------------- the plugin export

function scenarioNames(mod) {
  return Object.keys(mod).filter((k) => typeof mod[k] === 'function' && !['setup', 'teardown', 'handleSummary'].includes(k));
}

// Declares the custom metrics the init code made, so that the host refuses before the
// run a threshold on a metric nothing records (k6 refuses one on an unknown metric too).
// The tags the thresholds select are declared with any value: a script may set any tag.
function declareMetrics(o) {
  const tags = new Set();
  for (const key of Object.keys(o.thresholds || {})) {
    const m = /\{(.*)\}$/.exec(key);
    if (!m) continue;
    for (const pair of m[1].split(',')) {
      const name = pair.split(':')[0].trim();
      if (name) tags.add(name);
    }
  }
  hostMetrics.declare(
    [...metricsMade].map(([name, kind]) => ({ name, kind })),
    [...tags].map((name) => ({ name, values: [] })),
  );
}

function describeScript() {
  enterPhase('describe');
  const mod = load();
  const names = scenarioNames(mod);
  declareMetrics(mod.options || {});
  return {
    name: BUNDLE.name,
    version: '0.0.0',
    description: `k6 script ${BUNDLE.entry}`,
    scenarios: names.map((n) => ({ name: n, description: n === 'default' ? 'the default function' : `exported function ${n}` })),
    defaultConfig: optionsToml(mod.options || {}),
  };
}

export const plugin = {
  describe() {
    try {
      return describeScript();
    } catch (e) {
      const msg = failure(e);
      hostVu.reportPanic(msg);
      throw new Error(msg);
    }
  },
  setup(_config) {
    return guard('setup', () => {
      enterPhase('setup'); info = null;
      const mod = load();
      const data = typeof mod.setup === 'function' ? settleCall(mod.setup(), 'setup()') : undefined;
      return JSON.stringify(data === undefined ? null : data);
    });
  },
  init(data) {
    return guard('init', () => {
      enterPhase('init'); info = null;
      setupData = JSON.parse(data || 'null');
      load();
    });
  },
  iteration(scenario) {
    info = null; checkAt = 0;
    if (groupPath !== '') { groupPath = ''; tagsEpoch[0]++; }
    enterPhase('iteration');
    const fn = (loaded || load())[scenario];
    if (typeof fn !== 'function') throw `the script exports no function ${scenario}`;
    // The clock is read only for a minimum duration (each read is a WASI call). The
    // monotonic clock, not Date.now(): whole milliseconds on both reads could count up
    // to 1 ms too many and end the iteration short of the minimum (149.9 of 150 ms).
    const paced = runOptions.minIterationDuration !== undefined;
    const started = paced ? performance.now() : 0;
    try {
      const returned = fn(setupData);
      // An iteration that returned nothing and left nothing (no job, timer, socket
      // or uncaught error) has nothing to settle: the common case skips the call.
      if (returned !== undefined || (asyncSeen && (microtasks.length !== 0 || asyncQueue.length !== 0 || mainLoop.queue.length !== 0
        || mainLoop.timers.size !== 0 || mainLoop.sockets.size !== 0 || uncaughtErrors.length !== 0
        || unhandledRejections.size !== 0))) {
        settleCall(returned, scenario, true);
      }
      if (paced) {
        const rest = parseDuration(runOptions.minIterationDuration, 'options.minIterationDuration') - (performance.now() - started);
        // The host sleeps whole milliseconds: rounded up, never short.
        if (rest > 0) hostVu.sleep(Math.ceil(rest));
      }
    } catch (e) {
      if (asyncQueue.length !== 0) { try { flushAsync(); } catch (_) { /* the iteration's own error is the one to report */ } }
      resetMainLoop();
      throw failure(e);
    } finally {
      endCall();
    }
  },
  teardown(data) {
    return guard('teardown', () => {
      enterPhase('teardown'); info = null;
      const mod = load();
      if (typeof mod.teardown === 'function') settleCall(mod.teardown(JSON.parse(data || 'null')), 'teardown()');
    });
  },
};

