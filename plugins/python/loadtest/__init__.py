"""loadtest — write load-test scenarios in Python.

A scenario plugin is a WASI 0.2 component that the `host` runs once per virtual user
(VU). This package wraps the WIT contract (`loadtest:scenario@0.3.10`, world `scenario`)
in ordinary Python: subclass `Scenario`, and export it from the app module as `Plugin`:

    import loadtest

    class Hello(loadtest.Scenario):
        name = "hello-py"
        default_config = open_default_config()   # or a TOML string

        def iteration(self, scenario):
            res = loadtest.http.get(loadtest.env("BASE_URL", "http://127.0.0.1:8080") + "/", name="/")
            loadtest.check("status is 200", res.status == 200)

    Plugin = loadtest.export(Hello)

Build with componentize-py (from PyPI), against this package's `wit/`:

    componentize-py -d wit -w scenario componentize app -o plugin.wasm

All network I/O goes through the host (`http`, `websocket`, and `grpc`, `sockets` and
`browser` imported as `from loadtest import grpc, sockets, browser`: pages of the
host's Chromium), which enforces the run's allowlist
and records the built-in metrics. An exception raised by a scenario method is
a failed iteration (or a failed init/setup) whose message is the exception's text.
"""

import json as _json
import traceback as _traceback

from componentize_py_types import Err
from wit_world import exports as _exports
from wit_world.exports import plugin as _plugin
from wit_world.imports import http as _http
from wit_world.imports import metrics as _metrics
from wit_world.imports import vu as _vu
from wit_world.imports import websocket as _ws

from . import html, http, websocket  # noqa: F401  (sub-modules of the public API)
from .http import HttpError  # noqa: F401

__all__ = [
    "Scenario", "export", "check", "counter", "gauge", "rate", "trend", "sleep", "env",
    "info", "log", "data_len", "data_get", "http", "html", "websocket", "HttpError",
]


class Scenario:
    """A scenario plugin: set the class attributes, override the methods you need."""

    #: The plugin's name (`host inspect`, results).
    name = "python-plugin"
    #: Its version.
    version = "0.1.0"
    #: One line on what it does.
    description = ""
    #: Scenarios it can run, `exec` in the run config: [(name, description)].
    scenarios = [("default", "the default scenario")]
    #: The run config (TOML) used when the operator gives none.
    default_config = ""
    #: Custom metrics it records, declared to the host so a threshold on one it does
    #: not record is refused before the run: {name: "counter" | "gauge" | "rate" | "trend"}.
    metrics = {}
    #: Tags it sets and every value each takes (an empty list: any value):
    #: {"kind": ["retail", "bulk"]}.
    tags = {}

    def setup(self, config: dict) -> str:
        """Once before the run, with the run config; the result goes to `init`/`teardown`."""
        return ""

    def init(self, data: str) -> None:
        """Once per VU before its first iteration, with `setup`'s result."""

    def iteration(self, scenario: str) -> None:
        """One iteration of `scenario`; raise to fail it."""
        raise NotImplementedError("override Scenario.iteration")

    def teardown(self, data: str) -> None:
        """Once after the run, with `setup`'s result."""


def _failure(e: BaseException) -> Err:
    """An exception as the contract's error: its text, and where it was raised."""
    frames = _traceback.extract_tb(e.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    text = str(e)
    if not text and isinstance(e, MemoryError):
        # CPython raises it without a word when an allocation does not fit.
        text = "out of memory: the plugin's memory is capped ([limits] memory_mb)"
    return Err(f"{type(e).__name__}: {text}{where}" if text else f"{type(e).__name__}{where}")


def export(scenario_class):
    """Turns a `Scenario` subclass into the `Plugin` class componentize-py exports.

    One instance is made per VU (per component instance), on first use.
    """

    class Plugin(_exports.Plugin):
        _instance = None

        def _scenario(self):
            if Plugin._instance is None:
                Plugin._instance = scenario_class()
            return Plugin._instance

        def describe(self):
            s = scenario_class
            if s.metrics or s.tags:
                kinds = {
                    "counter": _metrics.MetricKind.COUNTER,
                    "gauge": _metrics.MetricKind.GAUGE,
                    "rate": _metrics.MetricKind.RATE,
                    "trend": _metrics.MetricKind.TREND,
                }
                _metrics.declare(
                    [_metrics.MetricDeclaration(name=n, kind=kinds[k]) for n, k in s.metrics.items()],
                    [_metrics.TagDeclaration(name=n, values=list(v)) for n, v in s.tags.items()],
                )
            return _plugin.PluginInfo(
                name=s.name,
                version=s.version,
                description=s.description,
                scenarios=[_plugin.ScenarioInfo(name=n, description=d) for n, d in s.scenarios],
                default_config=s.default_config,
            )

        def setup(self, config):
            try:
                return self._scenario().setup(_json.loads(config) if config else {}) or ""
            except Exception as e:
                raise _failure(e)

        def init(self, data):
            try:
                self._scenario().init(data)
            except Exception as e:
                raise _failure(e)

        def iteration(self, scenario):
            try:
                self._scenario().iteration(scenario)
            except Exception as e:
                raise _failure(e)

        def teardown(self, data):
            try:
                self._scenario().teardown(data)
            except Exception as e:
                raise _failure(e)

    return Plugin


def _tags(tags) -> list:
    return [(str(k), str(v)) for k, v in (tags or {}).items()]


def check(name: str, ok: bool, tags: dict = None) -> bool:
    """Records a check (`checks` in the summary); returns `ok`."""
    return _metrics.check(name, bool(ok), _tags(tags))


def counter(name: str, value: float = 1.0, tags: dict = None) -> None:
    """Adds to a custom counter (a sum)."""
    _metrics.add(name, _metrics.MetricKind.COUNTER, float(value), _tags(tags))


def gauge(name: str, value: float, tags: dict = None) -> None:
    """Sets a custom gauge (the last value)."""
    _metrics.add(name, _metrics.MetricKind.GAUGE, float(value), _tags(tags))


def rate(name: str, value: bool, tags: dict = None) -> None:
    """Adds a sample to a custom rate (the share of true values)."""
    _metrics.add(name, _metrics.MetricKind.RATE, 1.0 if value else 0.0, _tags(tags))


def trend(name: str, value: float, tags: dict = None) -> None:
    """Adds a sample to a custom trend (percentiles; milliseconds for timings)."""
    _metrics.add(name, _metrics.MetricKind.TREND, float(value), _tags(tags))


def trend_time(name: str, milliseconds: float, tags: dict = None) -> None:
    """Adds a sample to a custom trend of times (shown and exported as times, as k6's
    `Trend(name, true)`; contract 0.3.3)."""
    _metrics.add_time(name, float(milliseconds), _tags(tags))


def sleep(seconds: float) -> None:
    """Think time, without holding a host thread."""
    _vu.sleep(max(0, int(seconds * 1000)))


def env(name: str, default: str = None):
    """A variable of the run's environment (`[env]`, `-e KEY=VALUE`), else `default`."""
    value = _vu.env(name)
    return default if value is None else value


def info():
    """The VU and iteration: `.vu_id`, `.vu_id_in_scenario`, `.iteration`, `.scenario`, ..."""
    return _vu.info()


_LEVELS = {
    "trace": _vu.LogLevel.TRACE, "debug": _vu.LogLevel.DEBUG, "info": _vu.LogLevel.INFO,
    "warn": _vu.LogLevel.WARN, "error": _vu.LogLevel.ERROR,
}


def log(message: str, level: str = "info") -> None:
    """A line on the host's stderr (`trace`, `debug`, `info`, `warn`, `error`)."""
    if level not in _LEVELS:
        raise ValueError(f"log level {level!r}: use one of {', '.join(_LEVELS)}")
    _vu.log(_LEVELS[level], str(message))


def data_len(name: str):
    """Records in the shared data set `name` (`[data]`), or None if there is none."""
    return _vu.data_len(name)


def data_get(name: str, index: int):
    """Record `index` of the data set `name`, parsed from JSON, or None."""
    text = _vu.data_get(name, index)
    return None if text is None else _json.loads(text)
