"""Kernels run where no cache folder is writable (containers, Spark and Dask executors), reuse a
cache where one is, and honour NUMBA_CACHE_DIR.

Permission bits do not stop root (CI runs as root), so "not writable" is made real for any user:
each would-be cache folder is a regular file, where no folder can be created.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import streameval

SCRIPT = """
import numpy as np, streameval
from streameval.kernels import cache
y = np.array([0, 1, 1, 0, 1]); s = np.array([0.1, 0.8, 0.6, 0.3, 0.9])
sk = streameval.BinarySketch().update(y, s)
print(cache.ENABLED, cache.LOCATION, float(sk.roc_auc()))
"""


@pytest.fixture()
def sandbox(tmp_path) -> Path:
    """A copy of the package where no ``__pycache__`` folder can be created (as in a read-only
    container image), and a HOME where no cache folder can be created either."""
    pkg = tmp_path / "site"
    shutil.copytree(Path(streameval.__file__).parent, pkg / "streameval", ignore=shutil.ignore_patterns("__pycache__"))
    for root, _dirs, _files in os.walk(pkg / "streameval"):
        (Path(root) / "__pycache__").write_text("not a folder")
    (tmp_path / "home").write_text("not a folder")
    return tmp_path


def _run(base: Path, env_extra: dict[str, str]) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(PYTHONPATH=str(base / "site"), HOME=str(base / "home"), PYTHONDONTWRITEBYTECODE="1", **env_extra)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600, cwd=base)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()


def test_read_only_package_and_home_fall_back_to_a_temp_cache(sandbox):
    tmp = sandbox / "tmp"
    tmp.mkdir()
    enabled, location, auc = _run(sandbox, {"TMPDIR": str(tmp)})
    assert (enabled, auc) == ("True", "1.0")
    assert location.startswith(str(tmp))
    # A second process reuses what the first compiled.
    assert any(p.suffix == ".nbc" for p in Path(location).rglob("*"))
    assert _run(sandbox, {"TMPDIR": str(tmp)})[1] == location


def test_honours_numba_cache_dir(sandbox):
    target = sandbox / "numba-cache"
    enabled, location, auc = _run(sandbox, {"NUMBA_CACHE_DIR": str(target)})
    assert (enabled, location, auc) == ("True", str(target), "1.0")
    assert any(p.suffix in (".nbi", ".nbc") for p in target.rglob("*"))  # the kernels were cached there


def test_fallback_order(monkeypatch, tmp_path):
    import numba

    from streameval.kernels import cache

    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)  # restored after the test
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(cache, "_package_cache_writable", lambda: False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.configure() == (True, str(tmp_path / "xdg" / "streameval" / "numba"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(cache, "_writable_dir", lambda path: False)
    assert cache.configure() == (False, None)


def test_import_and_help_load_no_heavy_module():
    """``import streameval`` and ``streameval --help`` stay fast: no NumPy, Numba, pyarrow or DuckDB."""
    code = (
        "import sys, streameval; "
        "heavy = [m for m in ('numpy', 'numba', 'pyarrow', 'duckdb', 'scipy') if m in sys.modules]; "
        "assert not heavy, heavy; "
        "assert all(getattr(streameval, n) is not None for n in streameval.__all__); "
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
    helped = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom streameval.cli.main import main\nsys.argv = ['streameval', '--help']\n"
         "try:\n    main()\nexcept SystemExit:\n    pass\n"
         "heavy = [m for m in ('numpy', 'numba', 'pyarrow', 'duckdb') if m in sys.modules]\nassert not heavy, heavy"],
        capture_output=True, text=True, timeout=300,
    )
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "Usage" in helped.stdout
