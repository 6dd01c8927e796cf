"""Starts a real `basalt server` process on free ports for the Thrift client tests."""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request


class BasaltServer:
    """A `basalt server` child process with its own data directory.

    The binary is $BASALT_BIN (the test driver sets it to the one cargo built)."""

    def __init__(self, extra_args=(), workdir=None):
        """`workdir`: reuse the data directory of an earlier server (a restart)."""
        self.dir = workdir or tempfile.mkdtemp(prefix="basalt-thrift-")
        self.keep = False
        binary = os.environ.get("BASALT_BIN", "basalt")
        self.proc = subprocess.Popen(
            [binary, "server", "--bind", "127.0.0.1", "--port", "0", "--info-port", "0",
             "--thrift-port", "0", "--bigtable-port", "0", "--rest-port", "0", "--data-dir", os.path.join(self.dir, "data"), *extra_args],
            stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "server.log"), "wb"),
            text=True)
        lines = [self.proc.stdout.readline() for _ in range(4)]
        try:
            # "Basalt server listening on HOST:PORT (data directory ...)"
            self.native = lines[0].split()[4]
            self.info_url = lines[1].split()[-1].replace("0.0.0.0", "127.0.0.1")
            host_port = lines[2].split()[-1]
            self.host, port = host_port.rsplit(":", 1)
            self.port = int(port)
            # "Bigtable API on HOST:PORT"
            self.bigtable = lines[3].split()[-1]
        except (IndexError, ValueError):
            self.stop()
            raise RuntimeError(f"the server did not start: {lines!r}\n{self.log()}")

    def log(self):
        with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
            return f.read()

    def metrics(self):
        with urllib.request.urlopen(self.info_url + "metrics", timeout=10) as r:
            return r.read().decode()

    def metric(self, name):
        """The value of one sample line of /metrics (`name` with its labels)."""
        for line in self.metrics().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        raise KeyError(name)

    def alive(self):
        return self.proc.poll() is None

    def kill9(self):
        """Kills the process at once (no shutdown); the data directory stays for a restart."""
        self.proc.kill()
        self.proc.wait()
        self.keep = True
        return self.dir

    def stop(self):
        """SIGTERM; returns the exit code (0 for a clean shutdown)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def wait_until(check, timeout=30.0, what="the condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class BasaltThriftGateway(BasaltServer):
    """A `basalt server` and, in front of it, a `basalt thrift --server` gateway process:
    `host` and `port` are the gateway's, which reaches the server over its native API."""

    def __init__(self, extra_args=(), workdir=None):
        super().__init__(extra_args, workdir)
        binary = os.environ.get("BASALT_BIN", "basalt")
        self.gateway = subprocess.Popen(
            [binary, "thrift", "--server", self.native, "--bind", "127.0.0.1", "--port", "0"],
            stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "gateway.log"), "wb"),
            text=True)
        line = self.gateway.stdout.readline()
        try:
            # "HBase Thrift gateway on HOST:PORT, serving the server at ..."
            host_port = line.split()[4].rstrip(",")
            self.host, port = host_port.rsplit(":", 1)
            self.port = int(port)
        except (IndexError, ValueError):
            self.stop()
            raise RuntimeError(f"the gateway did not start: {line!r}\n{self.log()}")

    def log(self):
        with open(os.path.join(self.dir, "gateway.log"), errors="replace") as f:
            return super().log() + "\n--- gateway ---\n" + f.read()

    def alive(self):
        return super().alive() and self.gateway.poll() is None

    def stop(self):
        """Stops the gateway, then the server; the server's exit code."""
        if self.gateway.poll() is None:
            self.gateway.send_signal(signal.SIGTERM)
            try:
                self.gateway.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.gateway.kill()
                self.gateway.wait()
        return super().stop()

