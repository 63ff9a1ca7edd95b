"""gpusim over HTTP: the AWS Batch (rest-json) and SageMaker (json) wire protocols boto3 speaks.

One loopback port serves both services. A request carrying ``X-Amz-Target: SageMaker.<Operation>``
is a SageMaker call (POST /); any other request is routed as Batch by method and path, using the
``http.requestUri`` botocore's service model gives each operation (``POST /v1/submitservicejob``).
Point both ``AWS_ENDPOINT_URL_BATCH`` and ``AWS_ENDPOINT_URL_SAGEMAKER`` at ``endpoint``.

Time: every request first advances the model to the scaled wall clock under the engine's one lock,
and a pump thread advances it whenever the next event falls due, so jobs progress with no request.
``GET /gpusim/clock`` answers the virtual time as ``{"epochMillis": ...}`` (and every answer's ``Date``
header is dated on it), so a client in another process dates "now" as the emulated cluster does.
Events the model reports go on a queue that a publisher thread drains into EventBridge PutEvents
(10 entries a call), so HTTP handling never waits on delivery; like Batch's durable delivery, a
failed PutEvents is retried until it succeeds or the server stops.
"""

from __future__ import annotations

import collections
import email.utils
import json
import logging
import re
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from botocore.model import OperationModel, Shape
from botocore.session import get_session

from .api import ApiError, BatchApi, SageMakerApi
from .engine import RealtimeEngine
from .model import BatchModel

log = logging.getLogger(__name__)

PutEvents = Callable[[list[dict[str, Any]]], dict[str, Any]]
MAX_ENTRIES = 10
#: The longest the pump sleeps: a bound on lateness should a wake-up ever be missed.
MAX_PUMP_SLEEP = 0.5
_BATCH_CONTENT_TYPE = "application/json"
_SAGEMAKER_CONTENT_TYPE = "application/x-amz-json-1.1"
#: Where the server answers its virtual time (no AWS operation is served under /gpusim).
CLOCK_PATH = "/gpusim/clock"


# ------------------------------------------------------------------------------------ routing
class _Route:
    """One Batch operation's method and URI template, as a regex over the request path."""

    def __init__(self, operation: OperationModel) -> None:
        self.operation = operation
        self.method = operation.http["method"]
        path, _, query = operation.http["requestUri"].partition("?")
        # Greedy labels ({name+}) may span slashes; plain ones may not.
        pattern = re.sub(
            r"\{([A-Za-z0-9_]+)(\+?)\}",
            lambda m: f"(?P<{m.group(1)}>{'.+' if m.group(2) else '[^/]+'})",
            re.escape(path).replace(r"\{", "{").replace(r"\}", "}"),
        )
        self.regex = re.compile(f"^{pattern}$")
        self.static_query = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))

    def match(self, method: str, path: str, query: dict[str, list[str]]) -> dict[str, str] | None:
        """The URI labels if this route takes the request, else None."""
        if method != self.method:
            return None
        found = self.regex.match(path)
        if found is None:
            return None
        if any(query.get(k) != [v] for k, v in self.static_query.items() if v):
            return None
        return found.groupdict()


@cache
def _batch_routes() -> tuple[_Route, ...]:
    model = get_session().get_service_model("batch")
    routes = [_Route(model.operation_model(name)) for name in model.operation_names]
    # Literal paths before templated ones, so /v1/tags/x never shadows a fixed path.
    return tuple(sorted(routes, key=lambda r: r.regex.pattern.count("(?P<")))


@cache
def _sagemaker_model() -> Any:
    return get_session().get_service_model("sagemaker")


def _rest_params(
    operation: OperationModel, labels: dict[str, str], query: dict[str, list[str]], headers: Any, body: bytes
) -> dict[str, Any]:
    """A rest-json request as the operation's input dict: URI labels, query, headers and JSON body."""
    params = _json_body(body)
    shape = operation.input_shape
    if shape is None:
        return params
    for name, member in shape.members.items():
        location = member.serialization.get("location")
        wire = member.serialization.get("name", name)
        if location == "uri" and wire in labels:
            params[name] = urllib.parse.unquote(labels[wire])
        elif location == "querystring" and wire in query:
            values = query[wire]
            params[name] = values if member.type_name == "list" else _scalar(values[0], member)
        elif location == "header" and headers.get(wire) is not None:
            params[name] = _scalar(headers[wire], member)
    return params


def _scalar(text: str, shape: Shape) -> Any:
    if shape.type_name in ("integer", "long"):
        return int(text)
    if shape.type_name == "boolean":
        return text.lower() == "true"
    return text


def _json_body(body: bytes) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        params = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(400, "SerializationException", f"request body is not valid JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise ApiError(400, "SerializationException", "request body must be a JSON object")
    return params


def _wire_default(value: Any) -> Any:
    # boto3's parsers read both protocols' timestamps as epoch seconds.
    if isinstance(value, datetime):
        return value.timestamp()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# ---------------------------------------------------------------------------------- publisher
class EventPublisher:
    """Drains model events into EventBridge PutEvents, 10 entries a call, on its own thread."""

    def __init__(
        self, put_events: PutEvents, retry_seconds: float = 0.1, max_retry_seconds: float = 2.0
    ) -> None:
        self._put = put_events
        self._retry = retry_seconds
        self._max_retry = max_retry_seconds
        self._pending: collections.deque[dict[str, Any]] = collections.deque()
        self._cond = threading.Condition()
        self._in_flight = 0
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.published = 0
        self.failed_calls = 0
        self.dropped = 0

    def offer(self, envelope: dict[str, Any]) -> None:
        """Queue one event envelope (a model listener; never blocks on delivery)."""
        with self._cond:
            self._pending.append(envelope)
            self._cond.notify_all()

    def start(self) -> None:
        """Start the publisher thread."""
        self._thread = threading.Thread(target=self._run, name="gpusim-events", daemon=True)
        self._thread.start()

    def wait_idle(self, timeout: float) -> bool:
        """Block until every event offered so far was put (True) or ``timeout`` wall seconds pass."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def stop(self, timeout: float = 5.0) -> None:
        """Put what is queued (within ``timeout``), then end the thread; what is left is counted dropped."""
        self.wait_idle(timeout)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
        with self._cond:
            self.dropped += len(self._pending)
            self._pending.clear()

    def _run(self) -> None:
        delay = self._retry
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                batch = [self._pending.popleft() for _ in range(min(MAX_ENTRIES, len(self._pending)))]
                self._in_flight = len(batch)
            try:
                rejected = self._send(batch)
            except Exception:  # noqa: BLE001 - any failure to reach the bus is retried, as Batch does
                log.warning("PutEvents failed; retrying in %.1fs", delay, exc_info=True)
                rejected = batch
            with self._cond:
                self.published += len(batch) - len(rejected)
                self._in_flight = 0
                if rejected:
                    self.failed_calls += 1
                    self._pending.extendleft(reversed(rejected))
                self._cond.notify_all()
                if rejected:
                    self._cond.wait(delay)
                    delay = min(delay * 2, self._max_retry)
                else:
                    delay = self._retry

    def _send(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        response = self._put([to_entry(e) for e in batch])
        if not response.get("FailedEntryCount"):
            return []
        return [e for e, r in zip(batch, response.get("Entries", []), strict=False) if r.get("ErrorCode")]


def to_entry(envelope: dict[str, Any]) -> dict[str, Any]:
    """A PutEvents entry for an EventBridge envelope (the bus assigns a new id, as for any source)."""
    entry: dict[str, Any] = {
        "Source": envelope["source"],
        "DetailType": envelope["detail-type"],
        "Detail": json.dumps(envelope["detail"], default=_wire_default),
        "Resources": list(envelope.get("resources", [])),
    }
    if envelope.get("time"):
        entry["Time"] = datetime.strptime(envelope["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return entry


# ------------------------------------------------------------------------------------- server
class GpuSimServer:
    """Serves one ``BatchModel`` on a realtime engine as the Batch and SageMaker HTTP APIs."""

    def __init__(
        self,
        model: BatchModel,
        host: str = "127.0.0.1",
        port: int = 0,
        put_events: PutEvents | None = None,
    ) -> None:
        if not isinstance(model.engine, RealtimeEngine):
            raise TypeError("GpuSimServer needs a model on a RealtimeEngine (virtual time on a wall clock)")
        self.model = model
        self.engine: RealtimeEngine = model.engine
        self.batch = BatchApi(model)
        self.sagemaker = SageMakerApi(model)
        self.publisher = EventPublisher(put_events) if put_events is not None else None
        self._address = (host, port)
        self._httpd: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self.requests = 0

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        """``http://host:port`` of the running server."""
        if self._httpd is None:
            raise RuntimeError("the server is not running; call start() first")
        host, port = self._httpd.server_address[:2]
        return f"http://{host.decode() if isinstance(host, bytes) else host}:{port}"

    def start(self) -> GpuSimServer:
        """Bind the port and start the HTTP, clock-pump and event-publisher threads."""
        if self.publisher is not None:
            self.model.subscribe(self.publisher.offer)
            self.publisher.start()
        self._httpd = ThreadingHTTPServer(self._address, _handler_for(self))
        self._httpd.daemon_threads = True
        self._stopping.clear()
        self._threads = [
            # A short poll interval: shutdown() waits up to one interval for serve_forever to notice.
            threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="gpusim-http", daemon=True),
            threading.Thread(target=self._pump, name="gpusim-clock", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, stop the clock, then put the events still queued."""
        self._stopping.set()
        self._wake.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        for thread in self._threads:
            thread.join(5)
        self._threads = []
        self._httpd = None
        if self.publisher is not None:
            self.publisher.stop()
            self.model.bus.unsubscribe(self.publisher.offer)

    def __enter__(self) -> GpuSimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_for_events(self, timeout: float = 10.0) -> bool:
        """Advance the clock, then wait until every event so far reached EventBridge."""
        self.model.sync()
        return self.publisher.wait_idle(timeout) if self.publisher is not None else True

    # -- the clock ------------------------------------------------------------------------
    @property
    def clock_url(self) -> str:
        """Where the virtual time is answered (``GET``: ``{"epochMillis": ...}``)."""
        return f"{self.endpoint}{CLOCK_PATH}"

    def epoch_ms(self) -> int:
        """The virtual time now, in epoch milliseconds (after running what is due by it)."""
        with self.engine.lock:
            return self.model.ms(self.model.sync())

    def _pump(self) -> None:
        while not self._stopping.is_set():
            sleep = min(self.engine.wall_seconds_to_next(), MAX_PUMP_SLEEP)
            self._wake.wait(max(sleep, 0.001))
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                self.model.sync()
            except Exception:  # noqa: BLE001 - a model bug must not stop the clock for every later job
                log.exception("gpusim: advancing the clock failed")

    # -- dispatch -------------------------------------------------------------------------
    def call(self, service: str, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Run one operation at the current virtual time, under the engine's lock."""
        api = self.batch if service == "batch" else self.sagemaker
        with self.engine.lock:
            self.model.sync()
            self.requests += 1
            result = api.call(operation, params)
            # Work the call made due now (a scheduling pass) runs before the next caller looks.
            self.model.sync()
        self._wake.set()  # the next event may now be sooner than the pump is sleeping for
        return result

    def route(self, method: str, raw_path: str, headers: Any, body: bytes) -> tuple[str, str, dict[str, Any]]:
        """(service, operation, params) for a request, or ApiError when nothing serves it."""
        target = headers.get("X-Amz-Target")
        if target:
            prefix, _, operation = target.partition(".")
            model = _sagemaker_model()
            if prefix != model.metadata["targetPrefix"] or operation not in model.operation_names:
                raise ApiError(400, "UnknownOperationException", f"Unknown operation {target}")
            return "sagemaker", operation, _json_body(body)
        split = urllib.parse.urlsplit(raw_path)
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        for route in _batch_routes():
            labels = route.match(method, split.path, query)
            if labels is not None:
                op = route.operation
                return "batch", op.name, _rest_params(op, labels, query, headers, body)
        raise ApiError(404, "UnknownOperationException", f"No operation serves {method} {split.path}")


def _error_body(exc: ApiError) -> bytes:
    return json.dumps({"__type": exc.code, "message": exc.message}).encode()


def _handler_for(server: GpuSimServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """One HTTP request: route, call the model, answer as AWS would."""

        protocol_version = "HTTP/1.1"  # keep-alive, as boto3's connection pool expects
        # The status line and headers go out in one write and the body in another: with Nagle's
        # algorithm on, the body waits for the client's delayed ACK of the headers (about 40 ms on
        # Linux), which made every call about 200 times slower than the model's own work.
        disable_nagle_algorithm = True

        def date_time_string(self, timestamp: float | None = None) -> str:
            # The Date header, as AWS's answers carry one: on the virtual clock the answers speak of.
            at = server.epoch_ms() / 1000 if timestamp is None else timestamp
            return email.utils.formatdate(at, usegmt=True)

        def _serve_clock(self) -> None:
            data = json.dumps({"epochMillis": server.epoch_ms()}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _serve(self) -> None:
            if self.command == "GET" and urllib.parse.urlsplit(self.path).path == CLOCK_PATH:
                self._serve_clock()
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            service = "sagemaker" if self.headers.get("X-Amz-Target") else "batch"
            try:
                service, operation, params = server.route(self.command, self.path, self.headers, body)
                result = server.call(service, operation, params)
                status, payload = 200, json.dumps(result, default=_wire_default)
                error_code = None
            except ApiError as exc:
                status, payload, error_code = exc.status, _error_body(exc).decode(), exc.code
            except Exception as exc:  # noqa: BLE001 - answer 500 as AWS does instead of dropping the socket
                log.exception("gpusim: %s %s failed", self.command, self.path)
                code = "ServerException" if service == "batch" else "InternalFailure"
                error = ApiError(500, code, f"the emulator failed: {exc!r}")
                status, payload, error_code = 500, _error_body(error).decode(), code
            data = payload.encode()
            self.send_response(status)
            self.send_header(
                "Content-Type", _BATCH_CONTENT_TYPE if service == "batch" else _SAGEMAKER_CONTENT_TYPE
            )
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
            if error_code is not None:
                self.send_header("x-amzn-ErrorType", error_code)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 - http.server's names

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
            log.debug("gpusim %s", format % args)

    return Handler
