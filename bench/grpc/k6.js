// k6's side of bench/grpc/run.sh: one unary call per iteration over k6/net/grpc, on the
// same proto and server as the host's grpc-call plugin. One connection per VU, made in
// its first iteration (k6 cannot connect in the init context). PROTO_DIR and
// PROTO_FILE name the proto, GRPC_METHOD and GRPC_REQUEST (JSON) the call; the defaults
// are the grpcio server's.
import grpc from 'k6/net/grpc';

const method = __ENV.GRPC_METHOD || 'loadtest.test.Counter/Echo';
const request = JSON.parse(__ENV.GRPC_REQUEST || '{"text":"hi"}');
const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], __ENV.PROTO_FILE || 'counter.proto');
let connected = false;

export default function () {
    if (!connected) {
        client.connect(__ENV.GRPC_TARGET, { plaintext: true });
        connected = true;
    }
    const res = client.invoke(method, request);
    if (res.status !== grpc.StatusOK) {
        throw new Error(`status ${res.status}`);
    }
}
