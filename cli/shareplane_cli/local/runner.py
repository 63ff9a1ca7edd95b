"""Invoke the template's functions in-process from their SQS queues, as Lambda's event source mapping would.

moto cannot run Lambda code without Docker, so the runner owns invocation: it receives up to the
mapping's batch size, calls the real handler with a Lambda context and the function's template
environment, deletes what succeeded and lets failed records return (partial batch response), so
moto's redrive policy moves a record that keeps failing to the DLQ after maxReceiveCount.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from shareplane.bootstrap import Root, installed

from .aws_calls import AwsCall, AwsCallRecorder, Location, RolePolicy, event_source_calls, runtime_log_calls
from .stack import ACCOUNT, REGION, LocalStack, patched_environ
from .template import FunctionSpec


class _InvocationStdout(io.TextIOBase):
    """sys.stdout while a handler runs: what it prints goes to the current invocation's buffer.

    Loggers keep the stream they were created with (Powertools binds sys.stdout when a handler
    module is imported), so a fresh buffer per call would leave every later log line in the first.
    """

    def __init__(self) -> None:
        self.target: io.StringIO | None = None

    @contextlib.contextmanager
    def capturing(self, buffer: io.StringIO) -> Iterator[None]:
        """Send writes to ``buffer`` for the duration of a block."""
        saved, self.target = self.target, buffer
        try:
            yield
        finally:
            self.target = saved

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        # Outside an invocation (a service called in-process, after the runner repointed the shared
        # Powertools handler) log lines go to stderr: stdout is the command's output, which
        # `--output json` and a Click test runner parse.
        target = self.target if self.target is not None else sys.stderr
        return target.write(text) if target is not self else len(text)


_STDOUT = _InvocationStdout()


def _log_to_invocations(module: ModuleType) -> None:
    """Point a handler module's Powertools log handler at the per-invocation stdout.

    Powertools loggers of one service share the handler of the first one made in the process; one
    made outside the runner (by a test that imported a handler earlier) holds a stream of its own,
    which would swallow every invocation's log lines.
    """
    handler = getattr(getattr(module, "logger", None), "registered_handler", None)
    if isinstance(handler, logging.StreamHandler) and handler.stream is not _STDOUT:
        handler.setStream(_STDOUT)


@dataclass
class LambdaContext:
    """The Lambda context attributes handlers and Powertools read."""

    function_name: str
    aws_request_id: str
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = ""

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@dataclass
class Invocation:
    """One handler call: how many records, how many failed, what it printed (logs and EMF)."""

    function: str
    records: int
    failed: int
    output: str


@dataclass
class FunctionRunner:
    """Polls each function's queue and invokes its handler until every queue is drained."""

    stack: LocalStack
    invocations: list[Invocation] = field(default_factory=list)
    on_invocation: Callable[[Invocation], None] | None = None
    _modules: dict[str, ModuleType] = field(default_factory=dict)
    #: Each function's composition root and the environment it was built from: kept while the
    #: function's environment stays the same, as each function's warm Lambda container keeps its
    #: clients; a changed environment builds a new one, as a new container would.
    _roots: dict[str, tuple[dict[str, str], Root]] = field(default_factory=dict)
    #: Every AWS call the functions made, as IAM would authorize it (see aws_calls).
    recorder: AwsCallRecorder = field(init=False)
    _roles: dict[str, RolePolicy | None] = field(default_factory=dict)
    _topic_keys: dict[str, str | None] = field(default_factory=dict)
    _queue_arns: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.recorder = AwsCallRecorder(Location(REGION, ACCOUNT, self._topic_key))

    @property
    def calls(self) -> list[AwsCall]:
        """The most recent AWS calls the functions made (``AwsCallRecorder.KEEP`` of them)."""
        return list(self.recorder.calls)

    def drain(self, max_rounds: int = 1000) -> int:
        """Deliver until no queue has a visible or in-flight message; returns records processed."""
        processed = 0
        for _ in range(max_rounds):
            delivered = sum(self.poll_once(f) for f in self.stack.functions if f.queue_logical_id)
            processed += delivered
            if delivered == 0 and self.queues_empty():
                return processed
        raise RuntimeError(f"queues still busy after {max_rounds} rounds")

    def poll_once(
        self, function: FunctionSpec, hold: Callable[[], AbstractContextManager[None]] = nullcontext
    ) -> int:
        """Receive one batch for a function and invoke it (inside ``hold()``); returns the record count."""
        queue = function.queue_logical_id or ""
        if not self.stack.may_have_messages(queue):
            return 0
        sqs = self.stack.client("sqs")
        url = self.stack.queue_url(queue)
        messages = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=min(10, function.batch_size),
            AttributeNames=["All"],
            WaitTimeSeconds=0,
        ).get("Messages", [])
        if not messages:
            return 0
        with hold():
            arn = self._queue_arn(url)
            event = {"Records": [_sqs_record(m, arn) for m in messages]}
            try:
                response, output = self.invoke(function, event)
                failed = {f["itemIdentifier"] for f in (response or {}).get("batchItemFailures", [])}
            except Exception as exc:  # noqa: BLE001 - as in Lambda, a raising invocation fails the whole batch
                failed, output = {m["MessageId"] for m in messages}, f"invocation failed: {exc!r}"
            done = [m for m in messages if m["MessageId"] not in failed]
            self._record_event_source(function, arn, deleted=bool(done))
            if done:
                sqs.delete_message_batch(
                    QueueUrl=url,
                    Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
                )
            for message in messages:
                if (
                    message["MessageId"] in failed
                ):  # back on the queue now; the redrive policy counts receives
                    sqs.change_message_visibility(
                        QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                    )
        invocation = Invocation(function.logical_id, len(messages), len(failed), output)
        self.invocations.append(invocation)
        if self.on_invocation:
            self.on_invocation(invocation)
        return len(messages)

    def invoke(self, function: FunctionSpec, event: dict[str, Any]) -> tuple[Any, str]:
        """Call a handler in-process with its environment; returns its response and what it printed."""
        env = {**self.stack.environment(), **self.stack.function_environment(function)}
        env.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
        env["AWS_LAMBDA_FUNCTION_NAME"] = function.logical_id
        context = LambdaContext(function_name=function.logical_id, aws_request_id=str(uuid.uuid4()))
        buffer = io.StringIO()
        with patched_environ(env), contextlib.redirect_stdout(_STDOUT), _STDOUT.capturing(buffer):
            module = self._module(function)  # imported under its own environment, as in Lambda
            _log_to_invocations(module)
            built_from, root = self._roots.get(function.logical_id, (None, None))
            if root is None or built_from != env:
                # The emulator's clock is each function's own, as a Lambda's is AWS's: triggers are
                # dated on it, and the functions bound them by it.
                root = Root(env, clock=self.stack.cluster_time)
                self._roots[function.logical_id] = (env, root)
            handler = getattr(module, function.handler.split(".")[-1])
            role = self._role(function)
            with self.recorder.acting_as(function.logical_id, role), installed(root):
                response = handler(event, context)
        self._record_runtime_logs(function, role)
        return response, buffer.getvalue()

    def _queue_arn(self, url: str) -> str:
        """A queue's ARN (the records' eventSourceARN), asked of SQS once per queue."""
        if url not in self._queue_arns:
            attributes = self.stack.client("sqs").get_queue_attributes(
                QueueUrl=url, AttributeNames=["QueueArn"]
            )
            self._queue_arns[url] = attributes["Attributes"]["QueueArn"]
        return self._queue_arns[url]

    # -- what the function's role is asked for ---------------------------------------------------
    def _role(self, function: FunctionSpec) -> RolePolicy | None:
        if function.logical_id not in self._roles:
            from .roles import function_role

            self._roles[function.logical_id] = function_role(self.stack, function)
        return self._roles[function.logical_id]

    def _record_event_source(self, function: FunctionSpec, queue_arn: str, deleted: bool) -> None:
        found = event_source_calls(self.recorder.location, queue_arn, deleted)
        call = AwsCall(function.logical_id, "sqs", "EventSourcePoll", tuple(found), self._role(function))
        self.recorder.add(call)

    def _record_runtime_logs(self, function: FunctionSpec, role: RolePolicy | None) -> None:
        from .roles import log_group_name

        group = log_group_name(self.stack, function)
        if group:
            found = runtime_log_calls(self.recorder.location, group)
            self.recorder.add(AwsCall(function.logical_id, "logs", "RuntimeLogs", tuple(found), role))

    def _topic_key(self, topic_arn: str) -> str | None:
        """The ARN of the KMS key a topic is encrypted with (None: not encrypted)."""
        if topic_arn not in self._topic_keys:
            attributes = self.stack.client("sns").get_topic_attributes(TopicArn=topic_arn)["Attributes"]
            key = attributes.get("KmsMasterKeyId") or None
            if key and not key.startswith("arn:"):  # a key id (the template refs the key, not an alias)
                key = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{key}"
            self._topic_keys[topic_arn] = key
        return self._topic_keys[topic_arn]

    def _module(self, function: FunctionSpec) -> ModuleType:
        module_file, _ = function.handler.rsplit(".", 1)
        name = f"shareplane_local_{function.logical_id}"
        if name not in self._modules:
            spec = importlib.util.spec_from_file_location(name, function.code_dir / f"{module_file}.py")
            if spec is None or spec.loader is None:
                raise FileNotFoundError(f"{function.logical_id}: no {module_file}.py in {function.code_dir}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            self._modules[name] = module
        return self._modules[name]

    def queues_empty(self) -> bool:
        """Whether no function queue holds a visible or in-flight message."""
        sqs = self.stack.client("sqs")
        for function in self.stack.functions:
            if not function.queue_logical_id:
                continue
            attributes = sqs.get_queue_attributes(
                QueueUrl=self.stack.queue_url(function.queue_logical_id),
                AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
            )["Attributes"]
            if int(attributes["ApproximateNumberOfMessages"]) or int(
                attributes["ApproximateNumberOfMessagesNotVisible"]
            ):
                return False
        return True


def _sqs_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": message.get("MessageAttributes", {}),
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": "us-east-1",
    }
