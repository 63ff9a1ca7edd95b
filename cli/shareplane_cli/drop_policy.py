"""Who may write each team's drop folder, as drop-bucket policy statements rendered from the shares config.

For every team with ``submitters``, one statement denies s3:PutObject under ``submit/<team>/`` to any
principal whose ``aws:PrincipalArn`` is not one of them (a role session's aws:PrincipalArn is its
role's ARN). Deny, not Allow: the grants stay with each principal's own IAM policy, and an explicit
deny in a bucket policy wins over any allow, for principals of this account and of others
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html). s3:PutObject
also covers multipart uploads and the target of a copy
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-with-s3-policy-actions.html).

`shareplane config render` writes the statements between the marker comments inside the
DropBucketPolicy of template.yaml; a test fails when the two drift apart, and another evaluates the
rendered policy (moto does not enforce bucket policies).
"""

from __future__ import annotations

import json
import re

from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.errors import InvalidInputError

BEGIN = "# BEGIN generated: drop bucket team folders (shareplane config render)"
END = "# END generated: drop bucket team folders"
#: The statements are items of the policy's Statement list in template.yaml.
INDENT = 10


def statement_sid(index: int, team: str) -> str:
    """A Sid for a team's statement (letters and digits only; the index keeps "a-b" and "ab" apart)."""
    return f"TeamFolder{index}{re.sub(r'[^A-Za-z0-9]', '', team)}"


def render_statements(config: SharesConfig) -> str:
    """The YAML text of the team folder statements (without the marker lines), teams in sorted order."""
    pad = " " * INDENT
    lines: list[str] = []
    for index, team in enumerate(sorted(config.teams)):
        submitters = sorted(set(config.teams[team].submitters))
        if not submitters:
            continue  # no submitters: the folder is open to whoever the bucket's IAM lets write
        lines += [
            f"{pad}# Only team {team}'s submitters may drop specs under submit/{team}/.",
            f"{pad}- Sid: {statement_sid(index, team)}",
            f"{pad}  Effect: Deny",
            f'{pad}  Principal: "*"',
            f"{pad}  Action: s3:PutObject",
            f"{pad}  Resource: !Sub ${{DropBucket.Arn}}/submit/{team}/*",
            f"{pad}  Condition:",
            f"{pad}    ArnNotLike:",
            f"{pad}      aws:PrincipalArn:",
            *(f"{pad}        - {json.dumps(arn)}" for arn in submitters),
        ]
    return "".join(line + "\n" for line in lines)


def _span(text: str) -> tuple[int, int]:
    begin = list(re.finditer(rf"^ *{re.escape(BEGIN)}[ \t]*\n", text, re.MULTILINE))
    end = list(re.finditer(rf"^ *{re.escape(END)}[ \t]*$", text, re.MULTILINE))
    if len(begin) != 1 or len(end) != 1 or end[0].start() < begin[0].end():
        raise InvalidInputError(
            "template",
            f"needs exactly one '{BEGIN}' ... '{END}' pair in the DropBucketPolicy statements",
            "add the two marker comments there, then run `shareplane config render` again",
        )
    return begin[0].end(), end[0].start()


def read_statements(text: str) -> str:
    """The text between the team folder markers of ``text``."""
    start, end = _span(text)
    return text[start:end]


def apply_statements(text: str, statements: str) -> str:
    """``text`` with the team folder block replaced by ``statements``."""
    start, end = _span(text)
    return text[:start] + statements + text[end:]
