// ---------------------------------------------------------------- handleSummary

// The `summary` export (contract 0.3.3): the host calls it once after the run with
// k6's handleSummary data; each key of what the script returns is `stdout`, `stderr`
// or a file name (written into the results folder), each value a string or bytes.
export const summary = {
  handleSummary(data) {
    return guard('handleSummary', () => {
      enterPhase('teardown'); info = null;
      const mod = load();
      if (typeof mod.handleSummary !== 'function') return [];
      const out = settleCall(mod.handleSummary(JSON.parse(data)), 'handleSummary()');
      if (out === undefined || out === null) return [];
      if (typeof out !== 'object') throw new Error(`handleSummary must return an object of outputs, not ${typeof out}`);
      return Object.keys(out).map((to) => {
        const v = out[to];
        if (typeof v === 'string') return [to, utf8Encode(v)];
        if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) return [to, toBytes(v)];
        throw new Error(`handleSummary: the value for ${JSON.stringify(to)} must be a string or an ArrayBuffer, not ${v === null ? 'null' : typeof v}`);
      });
    });
  },
};
