const MODULES = {
  'k6': Object.assign({ default: k6 }, k6),
  'k6/http': Object.assign({ default: k6http }, k6http),
  'k6/metrics': Object.assign({ default: k6metrics }, k6metrics),
  'k6/execution': { default: execution },
  'k6/data': { default: { SharedArray }, SharedArray },
  'k6/encoding': { default: { b64encode, b64decode }, b64encode, b64decode },
  'k6/crypto': Object.assign({ default: k6crypto }, k6crypto),
  'k6-summary': Object.assign({ default: k6summary }, k6summary),
  'k6/html': Object.assign({ default: k6html }, k6html),
  'k6/ws': Object.assign({ default: k6ws }, k6ws),
  'k6/experimental/websockets': Object.assign({ default: k6websockets }, k6websockets),
  'k6/websockets': Object.assign({ default: k6websockets }, k6websockets),
  'k6/timers': Object.assign({ default: timers }, timers),
  'k6/net/grpc': Object.assign({ default: k6grpc }, k6grpc),
  'k6/experimental/redis': Object.assign({ default: k6redis }, k6redis),
  'k6/x/redis': Object.assign({ default: k6redis }, k6redis),
};

