"""Submitting: the job spec's rules, where a dropped spec goes, who may drop, who uploaded.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``attribution``: Who uploaded a drop: the principal CloudTrail names, joined to the jobs of that upload.
- ``drop_access``: Who may drop specs for a team: the checks made on each S3 event and each CloudTrail
  event.
- ``drop_keys``: The drop bucket's folders: ``submit/<team>/<file>`` names the team a spec is dropped for.
- ``payload``: What the submit path kept of a job it submitted: the request, the drop it came from, who
  uploaded it.
- ``submission``: Where a dropped spec goes after it is read, and the receipt or error report left beside
  it.
- ``jobspec``: Job specs dropped in S3: parse, validate, authorize, admit, and map to SubmitServiceJob
  requests.
"""

__all__ = [
    "attribution",
    "drop_access",
    "drop_keys",
    "payload",
    "submission",
    "jobspec",
]
