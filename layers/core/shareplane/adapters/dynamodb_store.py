"""DynamoDB single-table store for jobs: one current-state item per job, history items by ordering key.

Layout (one table, string keys ``pk``/``sk``):

| pk                  | sk               | what                                              |
|---------------------|------------------|---------------------------------------------------|
| ``JOB#<jobArn>``    | ``STATE``        | current state (``version`` guards racing writers) |
| ``JOB#<jobArn>``    | ``H#<at>#<seq>`` | one history item per distinct observation (TTL)   |
| ``JOB#<jobArn>``    | ``PAYLOAD``      | the SubmitServiceJob request as submitted         |
| ``JOB#<jobArn>``    | ``PREDICTION``   | the newest watch tick's start prediction (TTL)    |
| ``TJ#<arn>``        | ``STATE``        | SageMaker training job state (``OPEN`` while open) |
| ``TJ#<arn>``        | ``H#<seq>``      | training job history (TTL)                        |
| ``TJ#<arn>``        | ``JOB``          | which Batch job the training job belongs to       |
| ``TJ#<arn>``        | ``COST``         | what the training job cost, written once          |
| ``SPEND#<team>``    | ``<YYYY-MM>``    | the team's billed cost in a month (budgets)       |
| ``TICK#<runner>``   | ``TICK``         | the newest schedule tick a periodic run handled   |
| ``ARRIVALS#<queue>``| ``HOUR#<hour>``  | finished jobs counted by creation hour (TTL)      |

Each applied observation is ONE TransactWriteItems request: the history item (condition: not there
yet, which is what makes a re-delivered event a no-op), the state item (condition: the version we
read, so two writers can never lose a transition or move the state backwards), any new
training-job links and, once the job has finished, its move in the arrival counts
(``arrival_items``): counted in the same write as its state, a job is counted once.

A training job's STATE item is in the ByStatus index under ``OPEN_TRAINING`` while its status is not
final (a sparse entry: the versioned put of a final state drops it), so the running attempts a
team's month accrues, and those the watch reconciles, are one Query away, never a scan. A COST item
and the team's SPEND items (one ADD per month its billed interval touches) are one transaction.

The PREDICTION item sits beside the STATE item, not on it: the state is rewritten whole at each
transition (a versioned put), which would drop a prediction, and a prediction must not bump the
version the state's writers race on. Its own condition orders it: a put lands only when no
prediction is stored or the stored one was made at an earlier tick.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError

from ..domain.errors import ShareplaneError
from ..domain.forecast.arrivals import ArrivalKey, arrival_moves, hour_of
from ..domain.jobs.arns import training_job_key
from ..domain.jobs.lifecycle import (
    CapacityUsage,
    HistoryEntry,
    JobState,
    JobStatus,
    ObservationKind,
    Transition,
)
from ..domain.jobs.training import (
    TrainingHistoryEntry,
    TrainingJobObservation,
    TrainingJobState,
    TrainingJobStatus,
    TrainingTransition,
)
from .arrival_items import arrivals_pk, count_update, counts_from_item, hour_sk
from .dynamodb_items import (
    get_item,
    marshal,
    put_new,
    put_new_action,
    to_ddb,
    transact_new_and_versioned,
    unmarshal,
    versioned_put,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

    from ..domain.cost.billing import AttemptCost, OpenAttempt
    from ..domain.forecast.prediction import StartPrediction
    from ..domain.submit.payload import SubmittedPayload

logger = logging.getLogger(__name__)

STATE_SK = "STATE"
LINK_SK = "JOB"
COST_SK = "COST"
SPEND_PREFIX = "SPEND#"
PAYLOAD_SK = "PAYLOAD"
PREDICTION_SK = "PREDICTION"
#: The ByStatus partition that lists training jobs whose status is not final (a sparse index entry).
OPEN_TRAINING = "TRAINING#OPEN"
#: A stored prediction is only newer than the stored one when its tick is strictly later.
_NEWER_PREDICTION = "attribute_not_exists(pk) OR predictedAt < :at"
#: BatchGetItem reads at most 100 keys a request; unprocessed keys are asked again this many times.
_BATCH_GET_KEYS = 100
_BATCH_GET_ROUNDS = 5
HISTORY_PREFIX = "H#"
#: History items expire (TTL, epoch seconds) this long after the event; current state never does.
HISTORY_RETENTION_SECONDS = 400 * 24 * 3600


def job_pk(job_arn: str) -> str:
    """Partition key of a Batch job."""
    return f"JOB#{job_arn}"


def training_pk(training_job_arn: str) -> str:
    """Partition key of a SageMaker training job: its ARN normalised (``training_job_key``), so a
    lower-cased ARN from SageMaker and Batch's ``AWSBatch...`` find the same items."""
    return f"TJ#{training_job_key(training_job_arn)}"


def legacy_training_pk(training_job_arn: str) -> str:
    """The partition key items written before the normalisation have: the ARN as it was spelled."""
    return f"TJ#{training_job_arn}"


def job_state_item(state: JobState) -> dict[str, Any]:
    """The STATE item for a job (plain Python values)."""
    data = asdict(state)
    data["status"] = state.status.value
    data["field_seq"] = dict(state.field_seq)
    return {
        "pk": job_pk(state.job_arn),
        "sk": STATE_SK,
        "entity": "job",
        # Sparse index: list jobs by status (the CLI, the reconciler) without a scan.
        "gsi1pk": f"STATUS#{state.status.value}",
        "gsi1sk": f"{state.created_at or 0:013d}#{state.job_arn}",
        **data,
    }


def job_state_from_item(item: Mapping[str, Any]) -> JobState:
    """Rebuild a JobState from its STATE item."""
    fields = {k: v for k, v in item.items() if k in JobState.__dataclass_fields__}
    fields["status"] = JobStatus(fields["status"])
    fields["capacity_usage"] = tuple(CapacityUsage(**u) for u in fields.get("capacity_usage") or ())
    for name in ("training_job_arns", "seen"):
        fields[name] = tuple(fields.get(name) or ())
    return JobState(**fields)


def _listing_order(state: JobState) -> tuple[int, str]:
    created = state.created_at if isinstance(state.created_at, int) else 0
    return (created, state.job_arn)


def history_item(job_arn: str, entry: HistoryEntry) -> dict[str, Any]:
    """One history item of a job."""
    return {
        "pk": job_pk(job_arn),
        "sk": HISTORY_PREFIX + entry.key,
        "entity": "history",
        "status": entry.status.value,
        "at": entry.at,
        "reason": entry.reason,
        "kind": entry.kind.value,
        "digest": entry.digest,
        "attempts": entry.attempts,
        "preemptions": entry.preemptions,
        "trainingJobArn": entry.training_job_arn,
        "expiresAt": entry.at // 1000 + HISTORY_RETENTION_SECONDS,
        # Only a failure decision has these; other history items stay as they were.
        **{
            name: value
            for name, value in (
                ("failureClass", entry.failure_class),
                ("rule", entry.rule),
                ("action", entry.action),
            )
            if value is not None
        },
    }


def history_from_item(item: Mapping[str, Any]) -> HistoryEntry:
    """Rebuild a history entry from its item."""
    return HistoryEntry(
        key=item["sk"][len(HISTORY_PREFIX) :],
        status=JobStatus(item["status"]),
        at=item["at"],
        reason=item.get("reason"),
        kind=ObservationKind(item["kind"]),
        digest=item["digest"],
        attempts=item.get("attempts"),
        preemptions=item.get("preemptions"),
        training_job_arn=item.get("trainingJobArn"),
        failure_class=item.get("failureClass"),
        rule=item.get("rule"),
        action=item.get("action"),
    )


def prediction_item(job_arn: str, prediction: StartPrediction) -> dict[str, Any]:
    """The PREDICTION item of a job (kept as long as its history)."""
    return {
        "pk": job_pk(job_arn),
        "sk": PREDICTION_SK,
        "entity": "prediction",
        "jobArn": job_arn,
        **prediction.as_record(),
        "expiresAt": prediction.predicted_at // 1000 + HISTORY_RETENTION_SECONDS,
    }


def prediction_from_item(item: Mapping[str, Any]) -> StartPrediction:
    """Rebuild a stored prediction from its item (its fields are the record's ``prediction``)."""
    from ..domain.forecast.prediction import prediction_from_record  # the prediction path's alone

    prediction = prediction_from_record(dict(item))
    if prediction is None:
        raise ValueError(f"{item.get('pk')}: a PREDICTION item without predictedAt")
    return prediction


def training_state_item(state: TrainingJobState, pk: str | None = None) -> dict[str, Any]:
    """The STATE item for a training job, in the index under ``OPEN_TRAINING`` while not final.

    ``pk`` names the item's key when it lives under its legacy (original-casing) key.
    """
    data = asdict(state)
    data["status"] = state.status.value
    data["tags"] = dict(state.tags)
    item = {"pk": pk or training_pk(state.training_job_arn), "sk": STATE_SK, "entity": "training_job", **data}
    if not state.status.is_final:
        item["gsi1pk"] = OPEN_TRAINING
        item["gsi1sk"] = f"{state.created_at or 0:013d}#{state.training_job_arn}"
    return item


def training_state_from_item(item: Mapping[str, Any]) -> TrainingJobState:
    """Rebuild a TrainingJobState from its STATE item."""
    fields = {k: v for k, v in item.items() if k in TrainingJobState.__dataclass_fields__}
    fields["status"] = TrainingJobStatus(fields["status"])
    fields["seen"] = tuple(fields.get("seen") or ())
    return TrainingJobState(**fields)


def cost_item(cost: AttemptCost) -> dict[str, Any]:
    """The COST item of one training job (an attempt of a Batch job)."""
    return {
        "pk": training_pk(cost.training_job_arn),
        "sk": COST_SK,
        "entity": "cost",
        "trainingJobArn": cost.training_job_arn,
        "team": cost.team,
        "tier": cost.tier,
        "instanceType": cost.instance_type,
        "instanceCount": cost.instance_count,
        "billableSeconds": cost.billable_seconds,
        "usdPerHour": cost.usd_per_hour,
        "usd": cost.usd,
        "at": cost.at,
        "source": cost.source.value,
        "managedSpot": cost.managed_spot,
        "jobArn": cost.job_arn,
        "startedAt": cost.started_at,
    }


def cost_from_item(item: Mapping[str, Any]) -> AttemptCost:
    """Rebuild an attempt's cost from its COST item."""
    from ..domain.cost.billing import AttemptCost, BillableSource  # the cost paths' alone

    return AttemptCost(
        training_job_arn=item["trainingJobArn"],
        team=item.get("team"),
        tier=item.get("tier"),
        instance_type=item.get("instanceType"),
        instance_count=int(item.get("instanceCount") or 1),
        billable_seconds=float(item.get("billableSeconds") or 0),
        usd_per_hour=item.get("usdPerHour"),
        at=int(item.get("at") or 0),
        source=BillableSource(item.get("source", BillableSource.REPORTED.value)),
        managed_spot=bool(item.get("managedSpot")),
        job_arn=item.get("jobArn"),
        started_at=int(item["startedAt"]) if item.get("startedAt") is not None else None,
    )


def _monthly_parts(cost: AttemptCost) -> list[tuple[str, float, float]]:
    """(month, USD, billable instance-seconds) of each month the cost's billed interval touches."""
    by_month = cost.by_month()
    total = sum(by_month.values())
    seconds = cost.billable_seconds * cost.instance_count
    if total <= 0:  # nothing priced or nothing billed: the instance-seconds split as the time is
        from ..domain.cost.billing import spread_by_month

        shares = spread_by_month(1.0, cost.started_at, cost.at)
        return [(m, by_month.get(m, 0.0), seconds * f) for m, f in shares.items()]
    return [(m, usd, seconds * usd / total) for m, usd in by_month.items()]


def spend_key(team: str, month: str) -> dict[str, Any]:
    """Key of a team's spend item for one month."""
    return {"pk": {"S": f"{SPEND_PREFIX}{team}"}, "sk": {"S": month}}


class DynamoJobStore:
    """JobStore on one DynamoDB table, with conditional transactional writes."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name
        #: Training jobs (normalised keys) whose state was read from under a key written before the
        #: normalisation: their next state is written back there, where its version condition holds.
        self._legacy_states: set[str] = set()

    # -- jobs -------------------------------------------------------------------------------
    def load_job(self, job_arn: str) -> JobState | None:
        """The job's current state (strongly consistent read)."""
        item = self._get(job_pk(job_arn), STATE_SK)
        return job_state_from_item(item) if item else None

    def save_job(self, transition: Transition) -> bool:
        """One transaction: history (not yet there), state (at the version read), new links."""
        state = transition.state
        if transition.history is None:
            raise ValueError("a DUPLICATE transition has nothing to write")
        actions: list[TransactWriteItemTypeDef] = [
            self._put_new(history_item(state.job_arn, transition.history)),
            self._put_versioned(job_state_item(state), transition.previous),
        ]
        actions += [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": marshal(
                        {"pk": training_pk(arn), "sk": LINK_SK, "entity": "link", "jobArn": state.job_arn}
                    ),
                }
            }
            for arn in transition.new_training_job_arns
        ]
        buckets: dict[tuple[str, int], dict[ArrivalKey, int]] = {}
        for key, delta in arrival_moves(transition.previous, state).items():
            buckets.setdefault((key.queue, key.hour_ms), {})[key] = delta
        # One action per hour item: a transaction may not name an item twice. Counts expire as history does.
        actions += [
            count_update(self._table, q, hour, deltas, hour // 1000 + HISTORY_RETENTION_SECONDS)
            for (q, hour), deltas in buckets.items()
        ]
        return self._transact(actions)

    def arrival_counts(self, queue: str, since_ms: int) -> list[tuple[ArrivalKey, int]]:
        """The queue's finished jobs counted by creation hour, sorted, from the hour ``since_ms`` is in."""
        first = {"S": hour_sk(hour_of(since_ms))}
        items = self._paginate(
            "query",
            KeyConditionExpression="pk = :p AND sk >= :s",
            ExpressionAttributeValues={":p": {"S": arrivals_pk(queue)}, ":s": first},
        )
        # Sorted: an item's attributes come back in no set order, and the forecast draws by position.
        return sorted(count for item in items for count in counts_from_item(queue, item))

    def job_history(self, job_arn: str) -> Sequence[HistoryEntry]:
        """History items of a job in the order they happened (the sort key is the order)."""
        items = self._query_prefix(job_pk(job_arn), HISTORY_PREFIX)
        return [history_from_item(item) for item in items]

    def jobs(self, status: str | None = None) -> list[JobState]:
        """Every job's current state, optionally only those in one status."""
        if status:
            items = self._paginate(
                "query",
                IndexName="ByStatus",
                KeyConditionExpression="gsi1pk = :p",
                ExpressionAttributeValues={":p": {"S": f"STATUS#{status}"}},
            )
        else:
            items = self._paginate(
                "scan",
                FilterExpression="sk = :s AND entity = :e",
                ExpressionAttributeValues={":s": {"S": STATE_SK}, ":e": {"S": "job"}},
            )
        states = []
        for item in items:
            try:
                states.append(job_state_from_item(item))
            except (KeyError, TypeError, ValueError) as exc:
                # One row written before its fields were bounded, or by hand, must not hide every job.
                logger.warning("unreadable job row %s skipped: %r", item.get("pk"), exc)
        return sorted(states, key=_listing_order)

    def job_for_training_job(self, training_job_arn: str) -> str | None:
        """The Batch job a training job belongs to, when a Batch event has linked them."""
        item = self._get_training(training_job_arn, LINK_SK)
        return item["jobArn"] if item else None

    def _get_training(self, training_job_arn: str, sk: str) -> dict[str, Any] | None:
        """A training job's item under its normalised key, else under the key written before it."""
        item = self._get(training_pk(training_job_arn), sk)
        legacy = legacy_training_pk(training_job_arn)
        if item is None and legacy != training_pk(training_job_arn):
            item = self._get(legacy, sk)
            if item is not None and sk == STATE_SK:
                self._legacy_states.add(training_job_key(training_job_arn))
        return item

    # -- submitted payloads (the submit path; read back by requeue) ---------------------------
    def save_payload(self, job_arn: str, item: Mapping[str, Any]) -> bool:
        """Store the ``JOB#<arn>``/``PAYLOAD`` item once; False when it exists already."""
        return put_new(self._client, self._table, {**item, "pk": job_pk(job_arn), "sk": PAYLOAD_SK})

    def load_payload(self, job_arn: str) -> SubmittedPayload | None:
        """The job's submitted payload, if the submit path stored one."""
        from .payload_items import payload_of  # the requeue path's and the CLI's alone

        item = self._get(job_pk(job_arn), PAYLOAD_SK)
        return payload_of(job_arn, item) if item else None

    # -- start predictions (watch_jobs) ------------------------------------------------------
    def save_prediction(self, job_arn: str, prediction: StartPrediction) -> bool:
        """Store a job's prediction unless one from the same or a later tick is there; False then."""
        try:
            self._client.put_item(
                TableName=self._table,
                Item=marshal(prediction_item(job_arn, prediction)),
                ConditionExpression=_NEWER_PREDICTION,
                ExpressionAttributeValues={":at": {"N": str(prediction.predicted_at)}},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def load_prediction(self, job_arn: str) -> StartPrediction | None:
        """The job's newest stored prediction; None before its first."""
        item = self._get(job_pk(job_arn), PREDICTION_SK)
        return prediction_from_item(item) if item else None

    def prediction_times(self, job_arns: Sequence[str]) -> dict[str, int]:
        """When each of these jobs was last predicted (epoch ms), read 100 at a time (BatchGetItem's
        limit), ``predictedAt`` only; a job never predicted is absent."""
        times: dict[str, int] = {}
        unique = list(dict.fromkeys(job_arns))
        for first in range(0, len(unique), _BATCH_GET_KEYS):
            keys = [
                {"pk": {"S": job_pk(a)}, "sk": {"S": PREDICTION_SK}}
                for a in unique[first : first + _BATCH_GET_KEYS]
            ]
            request: dict[str, Any] = {self._table: {"Keys": keys, "ProjectionExpression": "pk, predictedAt"}}
            for _ in range(_BATCH_GET_ROUNDS):
                answer = self._client.batch_get_item(RequestItems=request)
                for raw in answer.get("Responses", {}).get(self._table, []):
                    item = unmarshal(raw)
                    times[str(item["pk"]).removeprefix(job_pk(""))] = int(item["predictedAt"])
                request = dict(answer.get("UnprocessedKeys") or {})
                if not request:
                    break
            # Keys still unprocessed after the rounds count as never predicted: such a job is then
            # predicted first, which costs a forecast target, never a lost prediction.
        return times

    # -- training jobs ----------------------------------------------------------------------
    def load_training_job(self, training_job_arn: str) -> TrainingJobState | None:
        """The training job's current state."""
        item = self._get_training(training_job_arn, STATE_SK)
        return training_state_from_item(item) if item else None

    def save_training_job(self, transition: TrainingTransition, observation: TrainingJobObservation) -> bool:
        """One transaction: history (not yet there) and state (at the version read).

        A state read from under its legacy key is written back there (its version condition is on that
        item); every other state under the normalised key.
        """
        state = transition.state
        at = observation.last_modified_at or 0
        pk = training_pk(state.training_job_arn)
        if (
            transition.previous is not None
            and training_job_key(state.training_job_arn) in self._legacy_states
        ):
            pk = legacy_training_pk(transition.previous.training_job_arn)
        history = {
            "pk": pk,
            "sk": f"{HISTORY_PREFIX}{observation.seq}",
            "entity": "training_history",
            "status": observation.status.value,
            "secondaryStatus": observation.secondary_status,
            "failureReason": observation.failure_reason,
            "at": at,
            "expiresAt": at // 1000 + HISTORY_RETENTION_SECONDS,
        }
        actions = [
            self._put_new(history),
            self._put_versioned(training_state_item(state, pk), transition.previous),
        ]
        return self._transact(actions)

    def training_history(self, training_job_arn: str) -> list[TrainingHistoryEntry]:
        """The training job's recorded SageMaker events, oldest first (by their LastModifiedTime)."""
        items = self._query_prefix(training_pk(training_job_arn), HISTORY_PREFIX)
        if training_pk(training_job_arn) != legacy_training_pk(training_job_arn):
            items += self._query_prefix(legacy_training_pk(training_job_arn), HISTORY_PREFIX)
        entries = [
            TrainingHistoryEntry(
                status=TrainingJobStatus(item["status"]),
                at=int(item.get("at") or 0),
                secondary_status=item.get("secondaryStatus"),
                failure_reason=item.get("failureReason"),
            )
            for item in items
        ]
        # The sort key orders finals last, then by time: a stable sort by time keeps that within a ms.
        return sorted(entries, key=lambda e: e.at)

    # -- cost -------------------------------------------------------------------------------
    def training_cost(self, training_job_arn: str) -> AttemptCost | None:
        """The recorded cost of one training job (None until its final event was costed)."""
        item = self._get_training(training_job_arn, COST_SK)
        return cost_from_item(item) if item else None

    def record_cost(self, cost: AttemptCost) -> bool:
        """One transaction: the COST item (not yet there) and the team's spend in each month it touches.

        The cost is spread over its billed interval by time (``AttemptCost.by_month``): one ADD per
        month, each with that month's part of the USD and of the billable instance-seconds, and the
        attempt counted in each. False when the training job was costed already: a repeated or
        reordered final event adds nothing, so each attempt is in the spend exactly once.
        """
        legacy = legacy_training_pk(cost.training_job_arn)
        if legacy != training_pk(cost.training_job_arn) and self._get(legacy, COST_SK) is not None:
            return False  # costed before the keys were normalised: its spend is in already
        actions: list[TransactWriteItemTypeDef] = [self._put_new(cost_item(cost))]
        if cost.team:
            actions += [
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": spend_key(cost.team, month),
                        "UpdateExpression": "ADD usd :usd, billableInstanceSeconds :s, attempts :one "
                        "SET entity = :e",
                        "ExpressionAttributeValues": {
                            ":usd": {"N": str(to_ddb(float(usd)))},
                            ":s": {"N": str(to_ddb(float(seconds)))},
                            ":one": {"N": "1"},
                            ":e": {"S": "spend"},
                        },
                    }
                }
                for month, usd, seconds in _monthly_parts(cost)
            ]
        return transact_new_and_versioned(self._client, actions, "cost written concurrently")

    def open_attempts(self) -> list[OpenAttempt]:
        """Every training job whose status is not final (the index's ``OPEN_TRAINING`` partition),
        each with the Batch job its LINK item names (None: none yet), read 100 keys at a time."""
        from ..domain.cost.billing import OpenAttempt  # the cost paths' alone

        items = self._paginate(
            "query",
            IndexName="ByStatus",
            KeyConditionExpression="gsi1pk = :p",
            ExpressionAttributeValues={":p": {"S": OPEN_TRAINING}},
        )
        states = [training_state_from_item(item) for item in items]
        links = self._batch_get([(training_pk(s.training_job_arn), LINK_SK) for s in states])
        job_of = {pk: str(item["jobArn"]) for (pk, _), item in links.items()}
        jobs = self._batch_get([(job_pk(arn), STATE_SK) for arn in sorted(set(job_of.values()))])
        return [
            OpenAttempt(
                state,
                job_state_from_item(jobs[(job_pk(job_of[pk]), STATE_SK)])
                if (pk := training_pk(state.training_job_arn)) in job_of
                and (job_pk(job_of[pk]), STATE_SK) in jobs
                else None,
            )
            for state in states
        ]

    def costs(self) -> list[AttemptCost]:
        """Every recorded attempt's cost, each with its Batch job when a link names it."""
        from ..domain.cost.billing import with_job

        items = self._paginate(
            "scan",
            FilterExpression="entity IN (:c, :l)",
            ExpressionAttributeValues={":c": {"S": "cost"}, ":l": {"S": "link"}},
        )
        # By the normalised key: a link and a cost written on either side of the normalisation still join.
        links = {
            training_pk(item["pk"][3:]): item["jobArn"] for item in items if item.get("entity") == "link"
        }
        return [
            with_job(cost_from_item(item), links.get(training_pk(item["pk"][3:])))
            for item in items
            if item.get("entity") == "cost"
        ]

    def month_spend(self, team: str, month: str) -> float:
        """USD the team's recorded attempts cost in ``month`` (``YYYY-MM``); 0 before its first."""
        response = self._client.get_item(
            TableName=self._table, Key=spend_key(team, month), ConsistentRead=True
        )
        value = response.get("Item", {}).get("usd", {}).get("N")
        return float(value) if value else 0.0

    # -- plumbing ---------------------------------------------------------------------------
    def _batch_get(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """The items of these keys that exist, by key (BatchGetItem: 100 keys a request, unprocessed
        keys asked again; keys still unprocessed after the rounds raise, so nothing is read as absent)."""
        found: dict[tuple[str, str], dict[str, Any]] = {}
        unique = list(dict.fromkeys(keys))
        for first in range(0, len(unique), _BATCH_GET_KEYS):
            chunk = [{"pk": {"S": pk}, "sk": {"S": sk}} for pk, sk in unique[first : first + _BATCH_GET_KEYS]]
            request: dict[str, Any] = {self._table: {"Keys": chunk, "ConsistentRead": True}}
            for _ in range(_BATCH_GET_ROUNDS):
                answer = self._client.batch_get_item(RequestItems=request)
                for raw in answer.get("Responses", {}).get(self._table, []):
                    item = unmarshal(raw)
                    found[(str(item["pk"]), str(item["sk"]))] = item
                request = dict(answer.get("UnprocessedKeys") or {})
                if not request:
                    break
            if request:
                # Throttled past the rounds: an absent link or job would read as "nobody's", so fail.
                raise ShareplaneError(
                    f"BatchGetItem left {len(request[self._table]['Keys'])} keys unprocessed; try again"
                )
        return found

    def _put_new(self, item: Mapping[str, Any]) -> TransactWriteItemTypeDef:
        return put_new_action(self._table, item)

    def _put_versioned(self, item: Mapping[str, Any], previous: Any) -> TransactWriteItemTypeDef:
        return {"Put": versioned_put(self._table, item, None if previous is None else previous.version)}

    def _transact(self, actions: Sequence[TransactWriteItemTypeDef]) -> bool:
        # The history item goes first: its condition failing means this observation was recorded.
        return transact_new_and_versioned(self._client, actions, "state changed since it was read")

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        return get_item(self._client, self._table, pk, sk)

    def _query_prefix(self, pk: str, prefix: str) -> list[dict[str, Any]]:
        return self._paginate(
            "query",
            KeyConditionExpression="pk = :p AND begins_with(sk, :s)",
            ExpressionAttributeValues={":p": {"S": pk}, ":s": {"S": prefix}},
            ConsistentRead=True,
        )

    def _paginate(self, operation: Literal["query", "scan"], **kwargs: Any) -> list[dict[str, Any]]:
        paginator = self._client.get_paginator(operation)
        items: list[dict[str, Any]] = []
        for page in paginator.paginate(TableName=self._table, **kwargs):
            items += [unmarshal(i) for i in page.get("Items", [])]
        return items
