"""The test run's own machinery: what `make test`'s time budget relies on holds."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_an_xdist_group_runs_on_one_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The local stacks are shared per xdist_group (tests/local/conftest.py): were the groups ignored,
    # every scenario would start once per worker and `make test` would run past its budget unnoticed.
    pytester.makepyfile(
        """
        import os
        import pytest

        pytestmark = pytest.mark.xdist_group("one")

        @pytest.mark.parametrize("n", range(6))
        def test_worker(n):
            with open(f"worker-{n}", "w") as out:
                out.write(os.environ["PYTEST_XDIST_WORKER"])
        """
    )
    # Only xdist: every other installed plugin would add seconds of start-up to each worker.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=6)
    workers = {(pytester.path / f"worker-{n}").read_text() for n in range(6)}
    assert len(workers) == 1, f"one group ran on {sorted(workers)}"
