"""Under CI=true a skipped test fails the run, except the skips CI cannot avoid (issue 14)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")
PYPROJECT = CONFTEST.parents[1] / "pyproject.toml"

SKIPPING_TESTS = '''
import pytest

def test_needs_shared_data():
    pytest.skip("shared data not found at /nowhere")

@pytest.mark.skipif(True, reason="/usr/bin/chromium is absent")
def test_needs_browser():
    pass

def test_needs_milvus():
    pytest.skip("MILVUS_URI is not set: no Milvus server to test against")
'''


def _run(tmp_path: Path, ci: str | None, tests: str = SKIPPING_TESTS
         ) -> subprocess.CompletedProcess[str]:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_skips.py").write_text(tests, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(CONFTEST.parents[1])  # the conftest imports the project's settings
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("ci", ["true", "1"])
def test_ci_turns_skips_into_failures_except_the_allowed_ones(tmp_path: Path, ci: str) -> None:
    out = _run(tmp_path, ci)
    assert out.returncode == 1, out.stdout
    # a skip in the test body fails it; a skip mark fails its setup (an error)
    assert "1 failed, 1 skipped, 1 error" in out.stdout, out.stdout
    assert "skipped under CI=true" in out.stdout
    assert "shared data not found" in out.stdout and "chromium is absent" in out.stdout


def test_outside_ci_skips_stay_skips(tmp_path: Path) -> None:
    out = _run(tmp_path, None)
    assert out.returncode == 0, out.stdout
    assert "3 skipped" in out.stdout, out.stdout


NO_POSTGRES = """
from tests.postgres_fixtures import require_pg_bin

def test_needs_postgres():
    require_pg_bin(path="", search=[])  # no initdb on PATH, no /usr/lib/postgresql/*/bin
"""


@pytest.mark.parametrize("ci", [None, "true"])
def test_without_postgresql_its_tests_say_how_to_install_it_and_fail_under_ci(
        tmp_path: Path, ci: str | None) -> None:
    out = _run(tmp_path, ci, NO_POSTGRES)
    assert "apt-get install postgresql" in out.stdout, out.stdout
    if ci is None:
        assert out.returncode == 0 and "1 skipped" in out.stdout, out.stdout
    else:
        assert out.returncode == 1 and "1 failed" in out.stdout, out.stdout
        assert "skipped under CI=true" in out.stdout


XPASSING_TEST = """
import pytest

@pytest.mark.xfail(reason="a known failure, since fixed")
def test_fixed_since():
    pass
"""


def test_an_xfail_test_that_passes_fails_the_run(tmp_path: Path) -> None:
    """The project's pytest settings (xfail_strict): an xfail marker cannot outlive the failure
    it describes unnoticed."""
    (tmp_path / "test_xpass.py").write_text(XPASSING_TEST, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rX", "-p", "no:cacheprovider", "-c",
         str(PYPROJECT), "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 1, out.stdout
    assert "1 failed" in out.stdout and "XPASS(strict)" in out.stdout, out.stdout
