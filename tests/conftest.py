"""Shared test fixtures, and the kernel warm-up of a test session (``warm_kernels.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_WARM: list[subprocess.Popen[bytes]] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start compiling the largest kernels on another core (see ``warm_kernels.py``), for the
    streameval these tests import; ``STREAMEVAL_TEST_WARMUP=0`` turns it off."""
    if os.environ.get("STREAMEVAL_TEST_WARMUP", "1") == "0":
        return
    import streameval

    package_parent = str(Path(streameval.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_parent, os.environ.get("PYTHONPATH", "")]))
    _WARM.append(subprocess.Popen([sys.executable, str(Path(__file__).with_name("warm_kernels.py"))], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for proc in _WARM:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.fixture(params=["continuous", "discrete", "coarse", "rare", "wide"])
def dist(request):
    return request.param
