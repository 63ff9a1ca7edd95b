"""The Batch queues of a shares config as CloudFormation, and the marked blocks of template.yaml they fill.

The shares config is the one source: `shareplane config render` writes what this module produces into
template.yaml between marker comments, and a test fails when the two drift apart. Everything here is
pure (text in, text out) and deterministic: teams, instance types and families are emitted in sorted
order, so reordering the config changes nothing.

What is rendered (after AWS's sample, which creates the same resources by script):

- one SAGEMAKER_TRAINING service environment per GPU instance family (``ml.p4d.24xlarge`` -> ``p4d``):
  in fair-share mode one ``NUM_INSTANCES`` limit (the family's summed capacity), in quota mode one
  limit per instance type, which is what turns quota management on;
- the GPU job queue over those environments, with a fair-share scheduling policy (one exact entry per
  share identifier: per team, or per team and tier in the ``team_tier`` layout, weighted by
  ``SharesConfig.share_weight_factor``, lower gets more) or a quota-share policy and one quota share
  per team (limits = the team's entitlement per instance type; in-share preemption by priority);
- a FIFO queue for CPU jobs with its own service environment (no scheduling policy: FIFO is what a
  queue created without one is, for good);
- ``jobStateTimeLimitActions`` so a head job stuck RUNNABLE does not block its queue forever;
- a ``UseExistingQueues`` parameter and ``CreateQueues`` condition on every Batch resource, so a
  stack can run against queues made elsewhere (their ARNs then come from parameters).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from shareplane.domain.config.shares import SchedulingMode, SharesConfig
from shareplane.domain.errors import ConfigError, InvalidInputError
from shareplane.domain.instance_types.catalog import instance_type as catalog_instance_type

#: The condition that guards every generated Batch resource.
CONDITION = "CreateQueues"
#: Template sections that hold a generated block, in file order; the Resources marker is the plain one.
SECTIONS = ("Parameters", "Conditions", "Rules", "Resources", "Outputs")
#: Sections that already exist in template.yaml: the block goes inside them, indented. Rules does not,
#: so its block is a whole top-level section.
NESTED = frozenset({"Parameters", "Conditions", "Resources", "Outputs"})

SERVICE_TYPE = "SAGEMAKER_TRAINING"
REASON_CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
REASON_SE_MAX = "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE"
REASON_QUOTA_LIMIT = "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED"
#: AWS Batch limits on quota management (quota-shares.html).
MAX_QUOTA_SHARES_PER_QUEUE = 20
MAX_CAPACITY_LIMITS_PER_SHARE = 5
QUEUE_ARN_PATTERN = r"^$|^arn:aws[a-z-]*:batch:[a-z0-9-]+:[0-9]{12}:job-queue/[A-Za-z0-9_-]{1,128}$"
POLICY_ARN_PATTERN = r"^$|^arn:aws[a-z-]*:batch:[a-z0-9-]+:[0-9]{12}:scheduling-policy/[A-Za-z0-9_-]{1,128}$"


def begin_marker(section: str) -> str:
    """The comment that opens the generated block of ``section``."""
    if section == "Resources":
        return "# BEGIN generated: batch queues (shareplane config render)"
    return f"# BEGIN generated: batch queues {section} (shareplane config render)"


def end_marker(section: str) -> str:
    """The comment that closes the generated block of ``section``."""
    return "# END generated: batch queues" + ("" if section == "Resources" else f" {section}")


# --------------------------------------------------------------------------------------------------
# CloudFormation short-form intrinsics, dumped as tags (!Ref, !GetAtt, ...) like the hand-written parts.


@dataclass(frozen=True)
class Ref:
    """``!Ref name``."""

    name: str


@dataclass(frozen=True)
class GetAtt:
    """``!GetAtt resource.attribute``."""

    resource: str
    attribute: str


@dataclass(frozen=True)
class Fn:
    """A list-argument intrinsic: ``!If``, ``!Equals``, ``!Not``, ``!Select``, ``!Split``."""

    name: str
    args: tuple[Any, ...]


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes the intrinsics above as short-form tags and never emits aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        # Indent list items under their key, as the hand-written parts of the template do.
        return super().increase_indent(flow, False)

    def choose_scalar_style(self) -> str:
        # PyYAML quotes every scalar with a local tag; `!Ref Name` reads better than `!Ref 'Name'`.
        event = self.event
        if isinstance(event, yaml.ScalarEvent) and event.tag in _SHORT_TAGS and not event.style:
            if self.analysis is None:
                self.analysis = self.analyze_scalar(event.value)
            if self.analysis.allow_flow_plain and self.analysis.allow_block_plain and not self.analysis.empty:
                return ""
        return super().choose_scalar_style()


_SHORT_TAGS = frozenset({"!Ref", "!GetAtt"})


_Dumper.add_representer(Ref, lambda d, v: d.represent_scalar("!Ref", v.name))
_Dumper.add_representer(GetAtt, lambda d, v: d.represent_scalar("!GetAtt", f"{v.resource}.{v.attribute}"))
_Dumper.add_representer(Fn, lambda d, v: d.represent_sequence(f"!{v.name}", list(v.args), flow_style=True))


def _dump(data: Mapping[str, Any], indent: int) -> str:
    text = yaml.dump(
        dict(data),
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=10_000,
        allow_unicode=True,
    )
    pad = " " * indent
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))


@dataclass(frozen=True)
class _Entry:
    """One key of a section, with the comment lines written above it."""

    key: str
    body: Any
    comment: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------------
# From config to resources.


def instance_family(instance_type: str) -> str:
    """``ml.p4d.24xlarge`` -> ``p4d``: the family a GPU service environment is made for (the catalog's)."""
    row = catalog_instance_type(instance_type)
    if row is not None:
        return row.family
    parts = instance_type.split(".")
    if len(parts) != 3 or parts[0] != "ml" or not re.fullmatch(r"[a-z0-9]+", parts[1]):
        raise ConfigError(
            f"instance_types.{instance_type}",
            "is not a SageMaker instance type of the form ml.<family>.<size>",
            "use a name such as ml.p4d.24xlarge",
        )
    return parts[1]


def _logical(text: str) -> str:
    # CloudFormation logical ids are alphanumeric; p4d -> P4d, g6e -> G6e.
    return re.sub(r"[^A-Za-z0-9]", "", text[:1].upper() + text[1:])


def families(config: SharesConfig) -> dict[str, dict[str, int]]:
    """GPU instance family -> {instance type: capacity}, both sorted."""
    out: dict[str, dict[str, int]] = {}
    for instance_type in sorted(config.instance_types):
        family = instance_family(instance_type)
        out.setdefault(family, {})[instance_type] = config.instance_types[instance_type].capacity
    return dict(sorted(out.items()))


def _teams_by_share(config: SharesConfig) -> dict[str, str]:
    """Share identifier (or quota share name) -> team, sorted; the config refuses two owners of one."""
    return {share: config.share_keys[share].team for share in sorted(config.share_keys)}


def _names(config: SharesConfig) -> dict[str, str]:
    # Queue names are the config's: the submit path sends jobs to exactly these names.
    kind = "fss" if config.mode is SchedulingMode.FAIRSHARE else "quota"
    return {
        "gpu_queue": config.gpu_queue_name(),
        "cpu_queue": config.queues.cpu_fifo or "",
        "policy": f"{config.cluster}-gpu-{kind}-policy",
        "cpu_env": f"{config.cluster}-cpu-fifo",
        "kind": kind,
    }


def _time_limits(config: SharesConfig, *, quota: bool) -> list[dict[str, Any]]:
    limits = {
        REASON_CAPACITY: config.queues.capacity_wait_limit_seconds,
        REASON_SE_MAX: config.queues.misconfiguration_wait_limit_seconds,
    }
    if quota:
        limits[REASON_QUOTA_LIMIT] = config.queues.misconfiguration_wait_limit_seconds
    # SAGEMAKER_TRAINING queues accept only TERMINATE, and only for RUNNABLE.
    return [
        {"Action": "TERMINATE", "State": "RUNNABLE", "Reason": reason, "MaxTimeSeconds": seconds}
        for reason, seconds in sorted(limits.items())
    ]


def _service_environment(name: str, limits: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "Type": "AWS::Batch::ServiceEnvironment",
        "Condition": CONDITION,
        "Properties": {
            "ServiceEnvironmentName": name,
            "ServiceEnvironmentType": SERVICE_TYPE,
            "State": "ENABLED",
            "CapacityLimits": limits,
        },
    }


def _quota_share(config: SharesConfig, share: str, team_name: str) -> dict[str, Any]:
    team = config.teams[team_name]
    limits = [
        {"CapacityUnit": unit, "MaxCapacity": team.entitlement[unit]}
        for unit in sorted(team.entitlement)
        if team.entitlement[unit] > 0
    ]
    if not limits:
        raise ConfigError(
            f"teams.{team_name}.entitlement",
            "entitles the team to no instances, but a quota share needs at least one capacity limit",
            "entitle the team to at least 1 instance of some type, or remove it",
        )
    if len(limits) > MAX_CAPACITY_LIMITS_PER_SHARE:
        raise ConfigError(
            f"teams.{team_name}.entitlement",
            f"names {len(limits)} instance types; a quota share takes {MAX_CAPACITY_LIMITS_PER_SHARE}",
            "entitle the team to fewer instance types",
        )
    sharing: dict[str, Any] = {"Strategy": team.quota.strategy}
    if team.quota.strategy == "LEND_AND_BORROW":
        sharing["BorrowLimit"] = team.quota.borrow_limit
    return {
        "Type": "AWS::Batch::QuotaShare",
        "Condition": CONDITION,
        "Properties": {
            "QuotaShareName": share,
            "JobQueue": GetAtt("GpuJobQueue", "JobQueueArn"),
            "State": "ENABLED",
            "CapacityLimits": limits,
            "ResourceSharingConfiguration": sharing,
            "PreemptionConfiguration": {
                "InSharePreemption": "ENABLED" if team.quota.in_share_preemption else "DISABLED"
            },
        },
    }


def fairshare_policy(config: SharesConfig) -> dict[str, Any]:
    """The GPU scheduling policy's FairsharePolicy: one exact entry per share identifier, at its baseline."""
    return {
        "ShareDecaySeconds": config.fairshare.share_decay_seconds,
        "ComputeReservation": config.fairshare.compute_reservation,
        "ShareDistribution": [
            {"ShareIdentifier": share, "WeightFactor": config.share_weight_factor(share)}
            for share in _teams_by_share(config)
        ],
    }


def quota_share(config: SharesConfig, share: str) -> dict[str, Any]:
    """The AWS::Batch::QuotaShare resource of a team's quota share, at its baseline."""
    return _quota_share(config, share, config.share_keys[share].team)


def _resources(config: SharesConfig) -> list[_Entry]:
    environments = _gpu_environments(config)
    return [
        *environments,
        _gpu_scheduling_policy(config),
        _gpu_job_queue(config, [entry.key for entry in environments]),
        *_gpu_quota_shares(config),
        *_cpu_resources(config),
    ]


def _gpu_environments(config: SharesConfig) -> list[_Entry]:
    """One service environment per GPU family; under quota, a capacity limit per instance type."""
    quota = config.mode is SchedulingMode.QUOTA
    entries = []
    for family, types in families(config).items():
        if quota:
            # A limit per instance type is what makes a service environment quota-managed.
            limits = [{"CapacityUnit": unit, "MaxCapacity": cap} for unit, cap in types.items()]
            why = f"GPU family {family}: a capacity limit per instance type (quota management)."
        else:
            limits = [{"CapacityUnit": "NUM_INSTANCES", "MaxCapacity": sum(types.values())}]
            why = f"GPU family {family}: {sum(types.values())} instances in all ({', '.join(types)})."
        name = f"{config.cluster}-{family}-{_names(config)['kind']}"
        entries.append(
            _Entry(f"GpuServiceEnvironment{_logical(family)}", _service_environment(name, limits), (why,))
        )
    return entries


def _gpu_scheduling_policy(config: SharesConfig) -> _Entry:
    if config.mode is SchedulingMode.QUOTA:
        shares = _teams_by_share(config)
        if len(shares) > MAX_QUOTA_SHARES_PER_QUEUE:
            raise ConfigError(
                "teams",
                f"has {len(shares)} teams; a quota-share queue takes at most {MAX_QUOTA_SHARES_PER_QUEUE}",
                "merge teams or use mode fairshare",
            )
        policy: dict[str, Any] = {"QuotaSharePolicy": {"IdleResourceAssignmentStrategy": "FIFO"}}
        why = "Quota shares: each team's entitlement is its limit; idle capacity is lent in FIFO order."
    elif config.tiered_shares:
        policy = {"FairsharePolicy": fairshare_policy(config)}
        why = (
            "Fair share per team and tier: weightFactor = top entitlement / entitlement x multiplier."
            " The baseline only: the rebalancer restores its own weights after a stack update."
        )
    else:
        policy = {"FairsharePolicy": fairshare_policy(config)}
        why = (
            "Fair share: weightFactor = max entitlement / entitlement (lower gets more). The baseline only:"
            " the rebalancer restores its own weights after a stack update puts these back."
        )
    return _Entry(
        "GpuSchedulingPolicy",
        {
            "Type": "AWS::Batch::SchedulingPolicy",
            "Condition": CONDITION,
            "Properties": {"Name": _names(config)["policy"], **policy},
        },
        (why,),
    )


def _job_queue(
    name: str, policy: GetAtt | None, environments: list[str], time_limits: list[dict[str, Any]]
) -> dict[str, Any]:
    """A service job queue taking from ``environments`` in order; without a policy, a FIFO queue."""
    return {
        "Type": "AWS::Batch::JobQueue",
        "Condition": CONDITION,
        "Properties": {
            "JobQueueName": name,
            "JobQueueType": SERVICE_TYPE,
            "State": "ENABLED",
            "Priority": 1,
            **({} if policy is None else {"SchedulingPolicyArn": policy}),
            "ServiceEnvironmentOrder": [
                {"Order": order, "ServiceEnvironment": GetAtt(env, "ServiceEnvironmentArn")}
                for order, env in enumerate(environments, start=1)
            ],
            "JobStateTimeLimitActions": time_limits,
        },
    }


def _gpu_job_queue(config: SharesConfig, environments: list[str]) -> _Entry:
    quota = config.mode is SchedulingMode.QUOTA
    policy = GetAtt("GpuSchedulingPolicy", "Arn")
    queue = _job_queue(_names(config)["gpu_queue"], policy, environments, _time_limits(config, quota=quota))
    why = "Team GPU jobs. A RUNNABLE head job that cannot start is terminated, not left blocking."
    return _Entry("GpuJobQueue", queue, (why,))


def _gpu_quota_shares(config: SharesConfig) -> list[_Entry]:
    if config.mode is not SchedulingMode.QUOTA:
        return []
    return [
        _Entry(f"GpuQuotaShare{_logical(share)}", quota_share(config, share))
        for share in _teams_by_share(config)
    ]


def _cpu_resources(config: SharesConfig) -> list[_Entry]:
    """The CPU queue and its own environment, when the config names one."""
    if not config.queues.cpu_fifo:
        return []
    cpu_total = sum(c.capacity for c in config.queues.cpu_instance_types.values())
    if cpu_total == 0:
        raise ConfigError(
            "queues.cpu_instance_types",
            "is empty but queues.cpu_fifo names a CPU queue",
            "list the CPU instance types and their capacity, or drop queues.cpu_fifo",
        )
    names = _names(config)
    limits = [{"CapacityUnit": "NUM_INSTANCES", "MaxCapacity": cpu_total}]
    types = ", ".join(sorted(config.queues.cpu_instance_types))
    time_limits = _time_limits(config, quota=False)
    queue = _job_queue(names["cpu_queue"], None, ["CpuServiceEnvironment"], time_limits)
    return [
        _Entry(
            "CpuServiceEnvironment",
            _service_environment(names["cpu_env"], limits),
            (f"CPU jobs ({types}): own environment.",),
        ),
        _Entry(
            "CpuJobQueue",
            queue,
            ("No SchedulingPolicyArn: a queue created without one is FIFO, and never gets one later.",),
        ),
    ]


def _parameters(config: SharesConfig) -> list[_Entry]:
    entries = [
        _Entry(
            "UseExistingQueues",
            {
                "Type": "String",
                "AllowedValues": ["true", "false"],
                "Default": "false",
                "Description": (
                    "true: create no Batch queues, service environments, scheduling policy or quota shares; "
                    "use the queues named by the Existing*Arn parameters instead."
                ),
            },
        ),
        _Entry(
            "ExistingGpuQueueArn",
            {
                "Type": "String",
                "Default": "",
                "AllowedPattern": QUEUE_ARN_PATTERN,
                "Description": "With UseExistingQueues=true: ARN of the GPU (fair-share or quota) queue.",
            },
        ),
        _Entry(
            "ExistingSchedulingPolicyArn",
            {
                "Type": "String",
                "Default": "",
                "AllowedPattern": POLICY_ARN_PATTERN,
                "Description": "With UseExistingQueues=true: ARN of the GPU queue's scheduling policy.",
            },
        ),
    ]
    if config.queues.cpu_fifo:
        entries.append(
            _Entry(
                "ExistingCpuQueueArn",
                {
                    "Type": "String",
                    "Default": "",
                    "AllowedPattern": QUEUE_ARN_PATTERN,
                    "Description": "With UseExistingQueues=true: ARN of the FIFO job queue for CPU jobs.",
                },
            )
        )
    return entries


def existing_arn_parameters(config: SharesConfig) -> list[str]:
    """The parameters a stack with UseExistingQueues=true must set."""
    required = ["ExistingGpuQueueArn", "ExistingSchedulingPolicyArn"]
    if config.queues.cpu_fifo:
        required.append("ExistingCpuQueueArn")
    return required


def _create_queues(config: SharesConfig) -> _Entry:
    terms = [Fn("Equals", (Ref("UseExistingQueues"), "false"))]
    terms += [Fn("Equals", (Ref(param), "")) for param in existing_arn_parameters(config)]
    return _Entry(
        CONDITION,
        Fn("Or", tuple(terms)),
        (
            'UseExistingQueues == "false". The ARN terms never decide at deploy time (the Rules block',
            "refuses UseExistingQueues=true without the ARNs); they tell cfn-lint that where the",
            "condition is false, !Ref Existing*Arn is an ARN and not the empty default.",
        ),
    )


def _rules(config: SharesConfig) -> list[_Entry]:
    required = existing_arn_parameters(config)
    body = {
        "ExistingQueuesNamed": {
            "RuleCondition": Fn("Equals", (Ref("UseExistingQueues"), "true")),
            "Assertions": [
                {
                    "Assert": Fn("Not", (Fn("Equals", (Ref(param), "")),)),
                    "AssertDescription": f"UseExistingQueues is true, so set {param}.",
                }
                for param in required
            ],
        }
    }
    return [_Entry("Rules", body, ("A stack on existing queues must be told which ones.",))]


def _outputs(config: SharesConfig) -> list[_Entry]:
    names = _names(config)
    gpu = _queue_outputs(
        "Gpu", names["gpu_queue"], "GPU job queue team jobs are submitted to", "ARN of the GPU job queue"
    )
    policy = _Entry(
        "GpuSchedulingPolicyArn",
        {
            "Description": "ARN of the GPU queue's scheduling policy (the rebalancer updates it)",
            "Value": Fn(
                "If",
                (CONDITION, GetAtt("GpuSchedulingPolicy", "Arn"), Ref("ExistingSchedulingPolicyArn")),
            ),
        },
    )
    if not config.queues.cpu_fifo:
        return [*gpu, policy]
    cpu = _queue_outputs(
        "Cpu", names["cpu_queue"], "FIFO job queue for CPU jobs", "ARN of the FIFO job queue for CPU jobs"
    )
    return [*gpu, policy, *cpu]


def _queue_outputs(kind: str, name: str, name_description: str, arn_description: str) -> list[_Entry]:
    """A queue's name and ARN outputs: the stack's own queue, or the existing one passed in by ARN."""
    existing = Ref(f"Existing{kind}QueueArn")
    name_of_existing = Fn("Select", (1, Fn("Split", ("job-queue/", existing))))
    return [
        _Entry(
            f"{kind}JobQueueName",
            {"Description": name_description, "Value": Fn("If", (CONDITION, name, name_of_existing))},
        ),
        _Entry(
            f"{kind}JobQueueArn",
            {
                "Description": arn_description,
                "Value": Fn("If", (CONDITION, GetAtt(f"{kind}JobQueue", "JobQueueArn"), existing)),
            },
        ),
    ]


def _block(entries: Iterable[_Entry], indent: int) -> str:
    pad = " " * indent
    parts: list[str] = []
    for entry in entries:
        comments = "".join(f"{pad}# {line}\n" for line in entry.comment)
        parts.append(comments + _dump({entry.key: entry.body}, indent))
    return "".join(parts)


def render(config: SharesConfig) -> dict[str, str]:
    """Section -> the YAML text of its generated block (without the marker lines)."""
    return {
        "Parameters": _block(_parameters(config), 2),
        "Conditions": _block([_create_queues(config)], 2),
        "Rules": _block(_rules(config), 0),
        "Resources": _block(_resources(config), 2),
        "Outputs": _block(_outputs(config), 2),
    }


# --------------------------------------------------------------------------------------------------
# Applying the blocks to template.yaml.


def shares_config_json(raw: Any) -> str:
    """The shares config as the template's SharesConfigParameter holds it: compact, key-sorted JSON."""
    return json.dumps(raw, separators=(",", ":"), sort_keys=True)


def _block_span(text: str, section: str) -> tuple[int, int, str]:
    """(start, end, indent) of the lines strictly between the section's markers."""
    begin = re.compile(rf"^( *){re.escape(begin_marker(section))}[ \t]*\n", re.MULTILINE)
    end = re.compile(rf"^ *{re.escape(end_marker(section))}[ \t]*$", re.MULTILINE)
    starts = list(begin.finditer(text))
    ends = list(end.finditer(text))
    if len(starts) != 1 or len(ends) != 1 or ends[0].start() < starts[0].end():
        where = "at the top level" if section not in NESTED else f"inside {section}"
        raise InvalidInputError(
            "template",
            f"needs exactly one '{begin_marker(section)}' ... '{end_marker(section)}' pair ({section})",
            f"add the two marker comments {where}, then run `shareplane config render` again",
        )
    return starts[0].end(), ends[0].start(), starts[0].group(1)


def read_blocks(text: str) -> dict[str, str]:
    """Section -> the text currently between that section's markers in ``text``."""
    out = {}
    for section in SECTIONS:
        start, end, _ = _block_span(text, section)
        out[section] = text[start:end]
    return out


_VALUE_LINE = re.compile(r"^(  SharesConfigParameter:\n(?:    .*\n)*?      Value: ).*$", re.MULTILINE)


def apply(text: str, blocks: Mapping[str, str], shares_json: str | None = None) -> str:
    """``text`` with each generated block replaced (and the SharesConfigParameter's value, when given)."""
    for section in SECTIONS:
        start, end, _ = _block_span(text, section)
        text = text[:start] + blocks[section] + text[end:]
    if shares_json is not None:
        if not _VALUE_LINE.search(text):
            raise InvalidInputError(
                "template",
                "has no SharesConfigParameter resource with a Value line",
                "add the SharesConfigParameter resource (AWS::SSM::Parameter)",
            )
        quoted = "'" + shares_json.replace("'", "''") + "'"
        text = _VALUE_LINE.sub(lambda m: m.group(1) + quoted, text, count=1)
    return text


class _TagIgnoringLoader(yaml.SafeLoader):
    """Reads a generated block back: CloudFormation's short-form intrinsics become plain values."""


_TagIgnoringLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def deployed_gpu_queue(text: str) -> tuple[SchedulingMode, str] | None:
    """The GPU queue ``text``'s generated block creates now: its policy type and queue name."""
    start, end, _ = _block_span(text, "Resources")
    resources = yaml.load(text[start:end], Loader=_TagIgnoringLoader) or {}  # noqa: S506 (safe loader)
    policy = (resources.get("GpuSchedulingPolicy") or {}).get("Properties") or {}
    queue = (resources.get("GpuJobQueue") or {}).get("Properties") or {}
    if not policy or not queue.get("JobQueueName"):
        return None
    mode = SchedulingMode.QUOTA if "QuotaSharePolicy" in policy else SchedulingMode.FAIRSHARE
    return mode, str(queue["JobQueueName"])


def refuse_mode_switch(text: str, config: SharesConfig) -> None:
    """Raise when the config switches an existing GPU queue between fair-share and quota-share.

    A scheduling policy's type is fixed once created (UpdateSchedulingPolicy: a fairsharePolicy
    cannot be changed to a quotaSharePolicy, nor back), and a queue keeps its policy's type; so a
    stack update could only fail half-way. A new queue (a new ``queues.gpu`` name) may have either.
    """
    deployed = deployed_gpu_queue(text)
    if deployed is None:
        return
    mode, queue = deployed
    if mode is not config.mode and queue == config.gpu_queue_name():
        raise ConfigError(
            "mode",
            f"is {config.mode.value}, but the template's GPU queue {queue} was created with a "
            f"{mode.value} scheduling policy, and a policy's type is fixed once created",
            f"keep mode {mode.value}, or give the new mode a new queue: set queues.gpu to a new name "
            "(docs/concepts/shares.md: Switching between fair-share and quota mode)",
        )


def diff(before: str, after: str, path: str) -> str:
    """A unified diff from the template as it is to the template as it should be."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"{path} (now)",
            f"{path} (rendered)",
        )
    )
