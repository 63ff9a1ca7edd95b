"""The rules that need a whole job: authorization against the team's config, admission against the
cluster, cross-field rules.

They run once a job's shape is right (``model``), in the order of ``JOB_RULES``, and every rule runs:
a job's answer lists all its problems at once, in that order. A rule takes the job and its context
and yields ``RuleProblem`` values; ``check_job`` turns them into ``Problem`` values under the job's
path. To add a rule, write a function here and put it in ``JOB_RULES`` where its problems belong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ...config.shares import InstanceTypeConfig, SchedulingMode, SharesConfig, TeamConfig
from .model import EXAMPLES, JobSpec
from .results import Problem, render_path

RESERVED_TAG_PREFIXES = ("aws:", "shareplane:")


@dataclass(frozen=True)
class JobContext:
    """What the rules and the request of a job need besides the job: the config, the team, the object."""

    config: SharesConfig
    team_name: str
    team: TeamConfig
    bucket: str
    key: str
    version_id: str | None

    def runs_on_cpu(self, spec: JobSpec) -> bool:
        """Whether the job's instance type is one of the CPU queue's (else it runs on the GPU queue)."""
        return spec.instance_type in self.config.queues.cpu_instance_types

    def instance_limits(self, spec: JobSpec) -> InstanceTypeConfig | None:
        """The cluster's limits for the job's instance type; None when the cluster has no such type."""
        config = self.config
        return config.instance_types.get(spec.instance_type) or config.queues.cpu_instance_types.get(
            spec.instance_type
        )


class RuleProblem(NamedTuple):
    """One problem a rule finds: the field of the job (empty for the whole job), what is wrong, the fix."""

    field: str
    problem: str
    fix: str


JobRule = Callable[[JobSpec, JobContext], Iterator[RuleProblem]]


def team_field_matches_folder(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """A job may name its team, but only the team whose folder it was dropped in."""
    if spec.team is not None and spec.team != ctx.team_name:
        yield RuleProblem(
            "team",
            f"names team {spec.team!r} but the file is submitted as team {ctx.team_name!r}",
            f"drop the file under submit/{spec.team}/ or set team: {ctx.team_name}",
        )


def cluster_has_instance_type(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """The instance type is one of the cluster's GPU or CPU types."""
    if ctx.instance_limits(spec) is None:
        config = ctx.config
        yield RuleProblem(
            "instance_type",
            f"cluster {config.cluster} has no {spec.instance_type}",
            f"use one of {sorted([*config.instance_types, *config.queues.cpu_instance_types])}",
        )


def team_may_use_instance_type(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """A team with an instance-type allowlist uses only those types (of the ones the cluster has)."""
    allowed = ctx.team.allowed_instance_types
    if ctx.instance_limits(spec) is not None and allowed and spec.instance_type not in allowed:
        yield RuleProblem(
            "instance_type",
            f"team {ctx.team_name} may not use {spec.instance_type}",
            f"use one of {list(allowed)}",
        )


def quota_share_holds_instance_type(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """In quota mode a GPU job waits forever unless the team's quota share has some of its type."""
    team = ctx.team
    if (
        ctx.instance_limits(spec) is not None
        and ctx.config.mode is SchedulingMode.QUOTA
        and not ctx.runs_on_cpu(spec)
        and not team.entitlement.get(spec.instance_type)
    ):
        yield RuleProblem(
            "instance_type",
            f"team {ctx.team_name}'s quota share has no capacity for {spec.instance_type}, so the job would "
            "wait forever",
            f"use one of {sorted(t for t, n in team.entitlement.items() if n)}",
        )


def cluster_has_enough_instances(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """A job asks for no more instances of a type than the cluster has."""
    limits = ctx.instance_limits(spec)
    if limits is not None and spec.instance_count > limits.capacity:
        yield RuleProblem(
            "instance_count",
            f"asks for {spec.instance_count} instances but the cluster has {limits.capacity} "
            f"{spec.instance_type}",
            f"use at most {limits.capacity} instances",
        )


def within_team_instance_count(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """A job asks for no more instances than the team's per-job limit."""
    limit = ctx.team.max_instance_count
    if limit is not None and spec.instance_count > limit:
        yield RuleProblem(
            "instance_count",
            f"asks for {spec.instance_count} instances but team {ctx.team_name} may use at most "
            f"{limit} per job",
            f"use at most {limit} instances",
        )


def image_is_allowed(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """A custom image under the team's registry paths, or a framework version from config."""
    yield from image_choice(spec, ctx)[1]


def team_has_execution_role(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """The job runs as the team's execution role, so the config must give the team one."""
    if ctx.team.execution_role_arn is None:
        yield RuleProblem(
            "",
            f"team {ctx.team_name} has no execution role in the shares config",
            f"ask the platform team to set teams.{ctx.team_name}.execution_role_arn",
        )


def inputs_under_team_prefixes(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """Every input channel reads from under the team's input prefixes."""
    prefixes = ctx.team.input_prefixes
    for channel, uri in spec.inputs.items():
        if not _under(uri, prefixes):
            yield RuleProblem(
                render_path("inputs", [channel]), *_outside(uri, ctx.team_name, "input", prefixes)
            )


def outputs_under_team_prefixes(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """Output and checkpoints go under the team's output prefixes."""
    prefixes = ctx.team.output_prefixes
    for name, uri in (("output_path", spec.output_path), ("checkpoint_path", spec.checkpoint_path)):
        if uri is not None and not _under(uri, prefixes):
            yield RuleProblem(name, *_outside(uri, ctx.team_name, "output", prefixes))


def tier_is_allowed(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """A GPU job asks only for a tier its team is allowed (HIGHPRI reclaims others' capacity)."""
    allowed = [tier.value for tier in ctx.team.allowed_tiers]
    if allowed and spec.priority not in allowed and not ctx.runs_on_cpu(spec):
        yield RuleProblem(
            "priority",
            f"{spec.priority} is not allowed for team {ctx.team_name} (allowed: {', '.join(allowed)})",
            f"use one of {', '.join(allowed)}, or ask the platform team to add {spec.priority} to "
            f"teams.{ctx.team_name}.allowed_tiers",
        )


def checkpoints_go_to_a_folder(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """A checkpoint path ends in "/": SageMaker writes its files under it as a key prefix, and reclaim
    and the hung check list it as a folder, so ".../run-1" would also see ".../run-10"'s files."""
    uri = spec.checkpoint_path
    if uri is not None and not uri.endswith("/"):
        yield RuleProblem(
            "checkpoint_path",
            f"{uri!r} does not end in '/': its keys would share a prefix with any path that extends it",
            f"end it with a slash: {uri + '/'!r}",
        )


def spot_wait_covers_runtime(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """A spot job names how long it may wait, at least its runtime; an on-demand job names no wait."""
    if spec.spot:
        if spec.max_wait_seconds is None:
            yield RuleProblem(
                "max_wait_seconds",
                "is required for spot jobs",
                f"add max_wait_seconds: >= {spec.max_runtime_seconds}",
            )
        elif spec.max_wait_seconds < spec.max_runtime_seconds:
            yield RuleProblem(
                "max_wait_seconds",
                f"is {spec.max_wait_seconds}, below max_runtime_seconds {spec.max_runtime_seconds}",
                f"use max_wait_seconds >= {spec.max_runtime_seconds}",
            )
    elif spec.max_wait_seconds is not None:
        yield RuleProblem("max_wait_seconds", "only applies to spot jobs", "remove it or set spot: true")


def within_team_retry_limit(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """A job asks for no more attempts than the team's limit."""
    limit = ctx.team.max_retry_attempts
    if spec.retry_attempts is not None and spec.retry_attempts > limit:
        yield RuleProblem(
            "retry_attempts",
            f"is {spec.retry_attempts}, above team {ctx.team_name}'s limit of {limit}",
            f"use at most {limit}",
        )


def tags_avoid_reserved_prefixes(spec: JobSpec, ctx: JobContext) -> Iterator[RuleProblem]:
    """AWS's and shareplane's own tags cannot be set by a spec."""
    for tag in spec.tags:
        if tag.lower().startswith(RESERVED_TAG_PREFIXES):
            yield RuleProblem(
                render_path("tags", [tag]), f"tag {tag!r} uses a reserved prefix", "rename the tag"
            )


#: The rules in the order their problems are reported: the team, the cluster's and the team's
#: instances, the image, the role, the data, spot, retries, tags.
JOB_RULES: tuple[JobRule, ...] = (
    team_field_matches_folder,
    cluster_has_instance_type,
    team_may_use_instance_type,
    quota_share_holds_instance_type,
    cluster_has_enough_instances,
    within_team_instance_count,
    image_is_allowed,
    team_has_execution_role,
    inputs_under_team_prefixes,
    outputs_under_team_prefixes,
    checkpoints_go_to_a_folder,
    tier_is_allowed,
    spot_wait_covers_runtime,
    within_team_retry_limit,
    tags_avoid_reserved_prefixes,
)


def check_job(spec: JobSpec, at: str, ctx: JobContext) -> list[Problem]:
    """Every problem ``JOB_RULES`` find in a well-shaped job, under the job's path ``at``."""
    return [
        Problem(f"{at}.{found.field}" if found.field else at, found.problem, found.fix)
        for rule in JOB_RULES
        for found in rule(spec, ctx)
    ]


def image_choice(spec: JobSpec, ctx: JobContext) -> tuple[str | None, tuple[RuleProblem, ...]]:
    """The training image a job runs, or None, with the problems that stop it (none when there is one).

    The image rule reports the problems and the request takes the image, so both read this one choice.
    """
    team, team_name = ctx.team, ctx.team_name
    if spec.image is not None and spec.framework is not None:
        return None, (
            RuleProblem(
                "image",
                "is set together with framework",
                "set either image or framework and framework_version",
            ),
        )
    if spec.image is not None:
        problems: list[RuleProblem] = []
        if spec.framework_version is not None:
            problems.append(
                RuleProblem(
                    "framework_version",
                    "is set without framework",
                    "remove it or set framework instead of image",
                )
            )
        if not team.allowed_image_prefixes:
            problems.append(
                RuleProblem(
                    "image",
                    f"team {team_name} may not use custom images",
                    f"use framework: one of {_allowed_frameworks(ctx.config, team)}",
                )
            )
        elif not any(spec.image.startswith(prefix) for prefix in team.allowed_image_prefixes):
            problems.append(
                RuleProblem(
                    "image",
                    f"{spec.image[:120]} is not under team {team_name}'s image prefixes",
                    f"push the image under one of {list(team.allowed_image_prefixes)}",
                )
            )
        else:
            return spec.image, tuple(problems)
        return None, tuple(problems)
    if spec.framework is not None:
        return _framework_image(spec, ctx)
    return None, (
        RuleProblem(
            "image",
            "is required unless framework is set",
            f"add image: {EXAMPLES['image']} or framework: pytorch",
        ),
    )


def _framework_image(spec: JobSpec, ctx: JobContext) -> tuple[str | None, tuple[RuleProblem, ...]]:
    config, team_name = ctx.config, ctx.team_name
    framework = spec.framework or ""
    allowed = _allowed_frameworks(config, ctx.team)
    if framework not in config.frameworks or framework not in allowed:
        return None, (
            RuleProblem(
                "framework", f"team {team_name} may not use framework {framework!r}", f"use one of {allowed}"
            ),
        )
    versions = config.frameworks[framework]
    if spec.framework_version is None:
        return None, (
            RuleProblem(
                "framework_version",
                "is required with framework",
                f"add framework_version: one of {sorted(versions)}",
            ),
        )
    images = versions.get(spec.framework_version)
    if images is None:
        return None, (
            RuleProblem(
                "framework_version",
                f"{framework} {spec.framework_version} is not offered",
                f"use one of {sorted(versions)}",
            ),
        )
    is_cpu = ctx.runs_on_cpu(spec)
    if is_cpu and images.cpu is None:
        return None, (
            RuleProblem(
                "framework_version",
                f"{framework} {spec.framework_version} has no CPU image",
                "use a GPU instance type or another version",
            ),
        )
    return (images.cpu if is_cpu else images.gpu), ()


def _allowed_frameworks(config: SharesConfig, team: TeamConfig) -> list[str]:
    return list(team.allowed_frameworks) or sorted(config.frameworks)


def _under(uri: str, prefixes: Sequence[str]) -> bool:
    """Whether ``uri`` lies under one of ``prefixes``, compared as paths.

    SageMaker reads an S3Prefix URI as a key prefix: "s3://b/corpora" reads "corpora-restricted/..."
    too. So a URI is allowed only when it starts with a whole allowed prefix, slash included (config
    prefixes always end in "/"); "s3://b/corpora" is refused even when "s3://b/corpora/" is allowed.
    """
    return any(uri.startswith(prefix) for prefix in prefixes)


def _stops_at_prefix(uri: str, prefixes: Sequence[str]) -> str | None:
    """The allowed prefix ``uri`` names without its trailing slash, if it does."""
    return next((prefix for prefix in prefixes if uri + "/" == prefix), None)


def _outside(uri: str, team_name: str, kind: str, prefixes: Sequence[str]) -> tuple[str, str]:
    if not prefixes:
        return (
            f"team {team_name} has no {kind} prefixes in the shares config",
            f"ask the platform team to set teams.{team_name}.{kind}_prefixes",
        )
    stopped = _stops_at_prefix(uri, prefixes)
    if stopped is not None:
        return (
            f"{uri[:160]} has no trailing slash, so it also names every key that starts with it "
            f"(e.g. {uri[:160]}-other/), outside team {team_name}'s {kind} prefix {stopped}",
            f"end it with /: {stopped}",
        )
    return (
        f"{uri[:160]} is outside team {team_name}'s {kind} prefixes",
        f"use a URI under one of {list(prefixes)}",
    )
