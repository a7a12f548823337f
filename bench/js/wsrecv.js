// capacity.js's live views alone (bench/k6-parity/capacity.js, `sockets`), against
// bench/js/wspush.py: each VU holds one k6/ws socket for HOLD_MS, with a timer that
// closes it, and counts the pushes it receives, as capacity's do.
import ws from 'k6/ws';
import { Counter } from 'k6/metrics';

const WS = __ENV.WS_URL || 'ws://127.0.0.1:18092/ws';
const HOLD_MS = parseInt(__ENV.HOLD_MS || '25000', 10);
const pushesReceived = new Counter('pushes_received');
const socketsOpened = new Counter('sockets_opened');

export const options = { vus: 1, duration: '10s' };

export default function () {
  ws.connect(WS, { tags: { name: '/ws' } }, (socket) => {
    socket.on('open', () => {
      socketsOpened.add(1);
      socket.send('{"subscribe": [1]}');
      socket.setTimeout(() => socket.close(), HOLD_MS);
    });
    socket.on('message', (text) => {
      if (text.indexOf('"note.') >= 0) pushesReceived.add(1);
    });
  });
}
