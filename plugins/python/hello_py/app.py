"""`hello-py`: the Python twin of `hello` — one `GET {BASE_URL}/` per iteration, checked.

Besides HTTP and checks it shows the rest of the SDK in a few lines: a custom trend,
env, think time (`THINK_MS`), a shared data set (when the run has `[data] users`), and,
with `WEBSOCKET=1`, a WebSocket to the demo application's live updates (`GET /ws`),
opened and subscribed in `init`.
"""

import json

import loadtest

DEFAULT_CONFIG = """[scenarios.default]
executor = "constant-vus"
vus = 2
duration = "5s"
"""


class Hello(loadtest.Scenario):
    name = "hello-py"
    version = "0.1.0"
    description = "GET {BASE_URL}/ once per iteration and check for a 200 (Python)"
    scenarios = [("default", "GET / and check the status")]
    default_config = DEFAULT_CONFIG

    def init(self, data):
        base = loadtest.env("BASE_URL", "http://127.0.0.1:8080")
        self.url = base.rstrip("/") + "/"
        self.think = int(loadtest.env("THINK_MS", "0")) / 1000
        self.socket = None
        if loadtest.env("WEBSOCKET") == "1":
            self.socket = self.subscribe(base, group=1)

    def subscribe(self, base, group):
        """Signs in, opens the live-updates socket and waits for its acknowledgement."""
        user = f"vu-{loadtest.info().vu_id}"
        res = loadtest.http.post(base + "/auth/token", json={"user": user}, name="/auth/token")
        if not loadtest.check("sign-in status is 200", res.status == 200):
            raise RuntimeError(f"sign-in as {user} failed with status {res.status}: {res.text}")
        ws_base = "ws" + base[len("http"):] if base.startswith("http") else "ws://" + base
        socket = loadtest.websocket.Socket.connect(
            f"{ws_base}/ws?token={res.json()['token']}", tags={"name": "/ws"}
        )
        socket.send_text(json.dumps({"subscribe": [group]}))
        while True:
            message = socket.recv(5)
            if message is None:
                raise RuntimeError("no acknowledgement of the subscription within 5 s")
            if isinstance(message, str) and json.loads(message).get("type") == "subscribed":
                loadtest.check("socket subscribed", True)
                return socket

    def iteration(self, scenario):
        users = loadtest.data_len("users")
        if users:
            user = loadtest.data_get("users", loadtest.info().iteration % users)
            loadtest.check("a user record", isinstance(user, dict))
        res = loadtest.http.get(self.url, name="/")
        loadtest.check("status is 200", res.status == 200)
        loadtest.trend("body_kb", res.body_size / 1024)
        if self.socket is not None:
            # Pushes of other users' changes, if any, without waiting for them.
            while self.socket.recv(0) is not None:
                loadtest.counter("pushes")
        if self.think:
            loadtest.sleep(self.think)


Plugin = loadtest.export(Hello)
