// The k6 modules a script may import, by name. A module's object is made on its first
// import (bundle.js's `require` keeps it), and the layer holds only the files of the
// modules the script imports (layer/mod.rs, `text_for`): a case of a module the script
// does not import names what is not declared, and is never reached.
function k6Module(id) {
  switch (id) {
    case 'k6': return Object.assign({ default: k6 }, k6);
    case 'k6/http': return Object.assign({ default: k6http }, k6http);
    case 'k6/metrics': return Object.assign({ default: k6metrics }, k6metrics);
    case 'k6/execution': return { default: execution };
    case 'k6/data': return { default: { SharedArray }, SharedArray };
    case 'k6/encoding': return { default: { b64encode, b64decode }, b64encode, b64decode };
    case 'k6/crypto': return Object.assign({ default: k6crypto }, k6crypto);
    case 'k6-summary': return Object.assign({ default: k6summary }, k6summary);
    case 'k6/html': return Object.assign({ default: k6html }, k6html);
    case 'k6/ws': return Object.assign({ default: k6ws }, k6ws);
    case 'k6/experimental/websockets': return Object.assign({ default: k6websockets }, k6websockets);
    case 'k6/websockets': return Object.assign({ default: k6websockets }, k6websockets);
    case 'k6/timers': return Object.assign({ default: timers }, timers);
    case 'k6/net/grpc': return Object.assign({ default: k6grpc }, k6grpc);
    case 'k6/experimental/redis': return Object.assign({ default: k6redis }, k6redis);
    case 'k6/x/redis': return Object.assign({ default: k6redis }, k6redis);
    case 'k6/secrets': return Object.assign({ default: k6secrets }, k6secrets);
    case 'k6/experimental/fs': return Object.assign({ default: k6fs }, k6fs);
    case 'k6/experimental/csv': return Object.assign({ default: k6csv }, k6csv);
    case 'k6/experimental/streams': return Object.assign({ default: k6streams }, k6streams);
    case 'k6/browser': return { default: { browser: k6browser }, browser: k6browser };
    default: return undefined;
  }
}
