"""Remote inputs: s3:// against a real S3 protocol server (moto's), https:// against a local HTTP
server, both compared with the same files read locally."""

from __future__ import annotations

import functools
import http.server
import os
import socket
import threading

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import streameval
from streameval.sources import SourceError
from streameval.sources.remote import expand_remote, is_remote


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _table(seed: int, n: int = 3000) -> pa.Table:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.clip(rng.integers(0, 50, n) / 50 + 0.2 * y, 0, 1)
    return pa.table({"y": y, "p": p, "country": rng.choice(["de", "fr"], n)})


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto S3 server on localhost with a bucket of hive-partitioned Parquet and a CSV file;
    also the same files on local disk."""
    from moto.server import ThreadedMotoServer  # in the test extra: a missing one fails, never skips
    from pyarrow import fs as pafs

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    s3fs = pafs.S3FileSystem(
        endpoint_override=f"http://127.0.0.1:{port}",
        scheme="http",
        access_key="test",
        secret_key="test",
        region="us-east-1",
        allow_bucket_creation=True,
    )
    s3fs.create_dir("logs")
    local = tmp_path_factory.mktemp("local")
    for day in (1, 2, 3):
        t = _table(day)
        pq.write_table(t, f"logs/preds/day={day}/part-0.parquet", filesystem=s3fs)
        (local / f"day={day}").mkdir()
        pq.write_table(t, local / f"day={day}" / "part-0.parquet")
    with s3fs.open_output_stream("logs/preds/_SUCCESS") as f:
        f.write(b"")
    csv = _table(9)
    with s3fs.open_output_stream("logs/flat.csv") as f:
        pcsv.write_csv(csv, f)
    pcsv.write_csv(csv, local / "flat.csv")
    yield local
    server.stop()
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _same(a, b):
    sa, sb = a.sketch, b.sketch
    assert sa.n_rows == sb.n_rows
    assert sa.roc_auc() == sb.roc_auc()
    assert sa.log_loss() == pytest.approx(sb.log_loss(), rel=1e-12)


def test_is_remote_tells_uris_from_paths():
    assert is_remote("s3://b/k") and is_remote("gs://b/k") and is_remote("https://h/x.parquet")
    assert not is_remote("/tmp/x.parquet") and not is_remote("C:\\logs\\x.csv") and not is_remote("x.parquet")


def test_s3_directory_glob_and_file_equal_local(s3):
    local = streameval.evaluate(str(s3 / "day=*" / "*.parquet"), score="p", label="y")
    for uri in ("s3://logs/preds", "s3://logs/preds/day=*/part-*.parquet", "s3://logs/**/*.parquet"):
        _same(streameval.evaluate(uri, score="p", label="y"), local)
    one = streameval.evaluate("s3://logs/preds/day=2/part-0.parquet", score="p", label="y")
    _same(one, streameval.evaluate(str(s3 / "day=2" / "part-0.parquet"), score="p", label="y"))
    csv = streameval.evaluate("s3://logs/flat.csv", score="p", label="y")
    _same(csv, streameval.evaluate(str(s3 / "flat.csv"), score="p", label="y"))


def test_s3_listing_skips_markers_and_keeps_hive_keys(s3):
    files = expand_remote(["s3://logs/preds"])
    assert [u.rsplit("/", 2)[-2] for u in files.uris] == ["day=1", "day=2", "day=3"]
    assert all(size > 0 for size in files.sizes)
    sliced = streameval.evaluate("s3://logs/preds", score="p", label="y", by=["day"])
    local = streameval.evaluate(str(s3 / "day=*" / "*.parquet"), score="p", label="y", by=["day"])
    a, b = sliced.to_pandas().sort_values("day"), local.to_pandas().sort_values("day")
    assert list(a["n_rows"]) == list(b["n_rows"]) and list(a["roc_auc"]) == list(b["roc_auc"])


def test_s3_errors_name_the_uri(s3):
    with pytest.raises(SourceError, match="s3://logs/missing"):
        streameval.evaluate("s3://logs/missing/*.parquet", score="p", label="y")
    with pytest.raises(SourceError, match="one filesystem"):
        expand_remote(["s3://logs/preds", "gs://other/x.parquet"])


@pytest.fixture(scope="module")
def http_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    pq.write_table(_table(4), root / "scores.parquet")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))

    class Quiet(handler.func):  # type: ignore[name-defined, misc]
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_https_file_equals_local(http_dir):
    root, url = http_dir
    remote = streameval.evaluate(f"{url}/scores.parquet", score="p", label="y")
    _same(remote, streameval.evaluate(str(root / "scores.parquet"), score="p", label="y"))
    with pytest.raises(SourceError, match="no file listing"):
        expand_remote([f"{url}/*.parquet"])


def test_cli_reads_s3_and_records_remote_provenance(s3):
    import json

    from typer.testing import CliRunner

    from streameval.cli.main import app

    out = CliRunner().invoke(app, ["eval", "s3://logs/preds", "--score", "p", "--label", "y", "--format", "json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    local = streameval.evaluate(str(s3 / "day=*" / "*.parquet"), score="p", label="y")
    assert report["metrics"]["roc_auc"]["value"] == float(local.sketch.roc_auc())
    names = [e["name"] for e in streameval.evaluate("s3://logs/preds", score="p", label="y").sketch.inputs]
    ids = [e["id"] for e in streameval.evaluate("s3://logs/preds", score="p", label="y").sketch.inputs]
    assert names == [f"s3://logs/preds/day={d}/part-0.parquet" for d in (1, 2, 3)]
    assert all(i and i.startswith("uri:") for i in ids) and len(set(ids)) == 3
