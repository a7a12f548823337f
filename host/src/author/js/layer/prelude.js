// The k6 API inside a JavaScript plugin (QuickJS), over the host's imports.
//
// `host build script.js` appends the user's bundle to this file (a table of module
// functions, see bundle.rs) and evaluates both once under Wizer: the compiled code is in
// the snapshot, shared by every VU. Nothing of the user's runs at build time: each
// instance runs the init code of the modules on its first call (describe, setup, init or
// teardown), with its own __ENV and __VU, as k6 runs init code once per VU.
import hostHttp from 'loadtest:scenario/http@0.3.10';
import hostCookies from 'loadtest:scenario/cookies@0.3.10';
import hostMetrics from 'loadtest:scenario/metrics@0.3.10';
import hostVu from 'loadtest:scenario/vu@0.3.10';
import hostHtml from 'loadtest:scenario/html@0.3.10';
import hostWs from 'loadtest:scenario/websocket@0.3.10';
import hostShared from 'loadtest:scenario/shared-data@0.3.10';
import hostRun from 'loadtest:scenario/run-control@0.3.10';
import hostGrpc from 'loadtest:scenario/grpc@0.3.10';
import hostNet from 'loadtest:scenario/sockets@0.3.10';
import hostBrowser from 'loadtest:scenario/browser@0.3.10';
import hostChecks from 'loadtest:k6-layer/checks@0.1.0';
import hostResponses from 'loadtest:k6-layer/responses@0.1.0';
import hostSamples from 'loadtest:k6-layer/samples@0.1.0';
import hostSockets from 'loadtest:k6-layer/sockets@0.1.0';
import hostRedis from 'loadtest:k6-layer/redis@0.1.0';
import hostCrypto from 'loadtest:k6-layer/crypto@0.1.0';
import hostLayerVu from 'loadtest:k6-layer/vu@0.1.0';

