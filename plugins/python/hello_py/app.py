"""`hello-py`: the Python twin of `hello` — one `GET {BASE_URL}/` per iteration, checked.

Besides HTTP and checks it shows the rest of the SDK in a few lines: a custom trend,
env, think time (`THINK_MS`), a shared data set (when the run has `[data] users`), and a
WebSocket (when `WS_URL` is set).
"""

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
        ws_url = loadtest.env("WS_URL")
        if ws_url:
            self.socket = loadtest.websocket.Socket.connect(ws_url)

    def iteration(self, scenario):
        users = loadtest.data_len("users")
        if users:
            user = loadtest.data_get("users", loadtest.info().iteration % users)
            loadtest.check("a user record", isinstance(user, dict))
        res = loadtest.http.get(self.url, name="/")
        loadtest.check("status is 200", res.status == 200)
        loadtest.trend("body_kb", res.body_size / 1024)
        if self.socket is not None:
            self.socket.send_text("ping")
            loadtest.check("socket answered", self.socket.recv(5) is not None)
        if self.think:
            loadtest.sleep(self.think)


Plugin = loadtest.export(Hello)
