"""Starts a real `basalt server` (or a `basalt rest --server` gateway in front of one) on free
ports for the REST client tests."""

import os
import shutil
import signal
import subprocess
import tempfile

BINARY = os.environ.get("BASALT_BIN", "basalt")


def _stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


class BasaltServer:
    """A `basalt server` child process with its own data directory; `url` is its REST
    gateway (`http://127.0.0.1:PORT`), `native` its native API."""

    def __init__(self, extra_args=()):
        self.dir = tempfile.mkdtemp(prefix="basalt-rest-")
        self.proc = subprocess.Popen(
            [BINARY, "server", "--bind", "127.0.0.1", "--port", "0", "--info-port", "0",
             "--thrift-port", "0", "--bigtable-port", "0", "--rest-port", "0",
             "--data-dir", os.path.join(self.dir, "data"), *extra_args],
            stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "server.log"), "wb"),
            text=True)
        lines = [self.proc.stdout.readline() for _ in range(5)]
        try:
            # "Basalt server listening on HOST:PORT (data directory ...)"
            self.native = lines[0].split()[4]
            self.info_url = lines[1].split()[-1]
            # "HBase REST gateway on http://HOST:PORT/"
            assert lines[4].startswith("HBase REST gateway on "), lines
            self.url = lines[4].split()[-1].rstrip("/")
        except (IndexError, AssertionError):
            self.stop()
            raise RuntimeError(f"the server did not start: {lines!r}\n{self.log()}")

    def log(self):
        with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
            return f.read()

    def metric(self, name):
        """The value of one sample line of /metrics (`name` with its labels)."""
        import urllib.request
        with urllib.request.urlopen(self.info_url + "metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[-1])
        raise KeyError(name)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        """SIGTERM; returns the exit code (0 for a clean shutdown)."""
        code = _stop(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class BasaltRestGateway(BasaltServer):
    """A server, and a `basalt rest --server` process in front of its native API (HBase's
    separate REST server); `url` is the gateway's."""

    def __init__(self, extra_args=()):
        super().__init__()
        self.server_url = self.url
        self.gateway = subprocess.Popen(
            [BINARY, "rest", "--server", self.native, "--port", "0", *extra_args],
            stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "gateway.log"), "wb"),
            text=True)
        line = self.gateway.stdout.readline()
        if not line.startswith("HBase REST gateway on "):
            _stop(self.gateway)
            super().stop()
            raise RuntimeError(f"the gateway did not start: {line!r}")
        # "HBase REST gateway on http://HOST:PORT/, serving the server at ..."
        self.url = line.split()[4].rstrip(",").rstrip("/")

    def alive(self):
        return super().alive() and self.gateway.poll() is None

    def stop(self):
        gateway = _stop(self.gateway)
        server = super().stop()
        return gateway or server
