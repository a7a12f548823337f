// k6's side of bench/grpc/run.sh: one unary call per iteration over k6/net/grpc, on the
// same proto and server as the host's grpc-call plugin. One connection per VU, made in
// its first iteration (k6 cannot connect in the init context).
import grpc from 'k6/net/grpc';

const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], 'counter.proto');
let connected = false;

export default function () {
    if (!connected) {
        client.connect(__ENV.GRPC_TARGET, { plaintext: true });
        connected = true;
    }
    const res = client.invoke('loadtest.test.Counter/Echo', { text: 'hi' });
    if (res.status !== grpc.StatusOK) {
        throw new Error(`status ${res.status}`);
    }
}
