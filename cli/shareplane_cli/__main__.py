"""``python -m shareplane_cli``: the `shareplane` command, as `up --env` runs it in the background."""

from .main import app

app(prog_name="shareplane")
