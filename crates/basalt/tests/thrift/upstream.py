"""Runs the client libraries' own test modules, from their PyPI source distributions,
against a real `basalt server`:

- happybase 1.3.0's tests/test_api.py, with the buffered and the framed transport (it has no
  setting for the protocol). Two defects of that released file are patched at run time, and
  nothing else: its port comes from the environment as a string (made an int), and it uses
  `assert_raises` without importing it (pytest's `raises`).
- aiohappybase 1.4.0's tests (asyncio and sync), with buffered and framed transports and the
  binary and compact protocols.

    python upstream.py happybase|aiohappybase SDIST_DIR [--gateway | --thrift HOST:PORT]

With `--gateway` the clients talk to a `basalt thrift --server` process in front of the server
(HBase's separate Thrift server) instead of the server's own gateway. With `--thrift` they
talk to a gateway already running (in front of a cluster, say), which this script leaves as
it found it.
"""

import glob
import os
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from basalt_server import BasaltServer, BasaltThriftGateway  # noqa: E402

PORT_LINE = "HAPPYBASE_PORT = os.environ.get('HAPPYBASE_PORT')"
IMPORT_LINE = "import six\n"


def extract(sdists, name, work):
    (archive,) = glob.glob(os.path.join(sdists, f"{name}-*.tar.gz"))
    with tarfile.open(archive) as t:
        t.extractall(work, filter="data")
    (root,) = glob.glob(os.path.join(work, f"{name}-*"))
    return root


def patched_happybase_tests(root, work):
    source = open(os.path.join(root, "tests", "test_api.py")).read()
    assert source.count(PORT_LINE) == 1 and source.count(IMPORT_LINE) == 1, "unexpected file"
    source = source.replace(PORT_LINE, "HAPPYBASE_PORT = int(os.environ.get('HAPPYBASE_PORT'))")
    source = source.replace(IMPORT_LINE, IMPORT_LINE + "from pytest import raises as assert_raises\n")
    path = os.path.join(work, "test_happybase_upstream.py")
    with open(path, "w") as f:
        f.write(source)
    return path


def run(args, env, cwd):
    print("$", " ".join(args), {k: v for k, v in env.items() if "HAPPYBASE" in k}, flush=True)
    return subprocess.run(args, env={**os.environ, **env}, cwd=cwd).returncode


class RunningGateway:
    """A gateway someone else started and will stop."""

    def __init__(self, address):
        self.host, port = address.rsplit(":", 1)
        self.port = int(port)

    def alive(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def main(which, sdists, gateway=False, thrift=None):
    failures = 0
    if thrift:
        start = lambda: RunningGateway(thrift)  # noqa: E731
    else:
        start = BasaltThriftGateway if gateway else BasaltServer
    with tempfile.TemporaryDirectory() as work, start() as server:
        root = extract(sdists, which, work)
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        if which == "happybase":
            test = patched_happybase_tests(root, work)
            for transport in ["buffered", "framed"]:
                env = {"HAPPYBASE_HOST": server.host, "HAPPYBASE_PORT": str(server.port),
                       "HAPPYBASE_TRANSPORT": transport}
                failures += run(pytest + [test], env, work) != 0
        else:
            for transport in ["buffered", "framed"]:
                for protocol in ["binary", "compact"]:
                    env = {"AIOHAPPYBASE_HOST": server.host,
                           "AIOHAPPYBASE_PORT": str(server.port),
                           "AIOHAPPYBASE_TRANSPORT": transport,
                           "AIOHAPPYBASE_PROTOCOL": protocol}
                    failures += run(pytest + ["tests"], env, root) != 0
        if not server.alive():
            print(server.log())
            failures += 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    rest = sys.argv[3:]
    main(sys.argv[1], sys.argv[2], gateway="--gateway" in rest,
         thrift=rest[rest.index("--thrift") + 1] if "--thrift" in rest else None)
