"""Runs the official python-bigtable system tests, from the google-cloud-bigtable 2.50.2
source distribution on PyPI, in emulator mode against a real `basalt server`'s Bigtable
gateway (data API and table admin API over gRPC):

- `data`: tests/system/data/, the data client (`google.cloud.bigtable.data`), its async and
  its sync form. The metrics modules there skip themselves whole in emulator mode; they
  are run all the same, so that a release that stops skipping them is noticed.
- `v2_data_api`: tests/system/v2_client/test_data_api.py, the classic client's data API.
- `v2_table_admin`: tests/system/v2_client/test_table_admin.py, its table admin API.

    python upstream.py GROUP SDIST_DIR [--endpoint HOST:PORT]

Emulator mode is what the suite's `system_emulated` nox session sets up:
BIGTABLE_EMULATOR_HOST names the endpoint (the clients then use a plaintext channel and
anonymous credentials, and the classic client the project `google-cloud-bigtable-emulator`),
and GOOGLE_CLOUD_PROJECT is `emulated-test-project`. With it the fixtures create no instance
(the instance admin API is never called: any project and instance name is taken as it
comes), an authorized view is asked for once per test class and a refusal with UNIMPLEMENTED
leaves it out, and the tests of what the emulator lacks (SQL, authorized views, splits and
their samples, IAM, backups, large cells, channel refresh, metrics export, some
INVALID_ARGUMENT checks) skip themselves. The variables the suite reads to use an existing
instance or table (BIGTABLE_TEST_INSTANCE, BIGTABLE_TEST_TABLE) or a KMS key are removed.

Every test that is not skipped must pass, and the counts must be those the suite gives
against Google's own emulator (EXPECTED), so that a test skipped, or not collected, for a
reason of its own fails the run. Nothing in the upstream files is patched; the tests run
against the installed google-cloud-bigtable of the same version, not the sdist's copy.

The server is a `basalt server` on free ports (tests/thrift/basalt_server.py starts it with
`--bigtable-port 0` and reads the gateway's address). With `--endpoint` the tests talk to a
gateway already running instead (another Basalt, or Google's emulator for a baseline),
which this script leaves as it found it.
"""

import glob
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ElementTree

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "thrift"))

from basalt_server import BasaltServer  # noqa: E402

PACKAGE = "google-cloud-bigtable"
VERSION = "2.50.2"

GROUPS = {
    "data": ["tests/system/data"],
    "v2_data_api": ["tests/system/v2_client/test_data_api.py"],
    "v2_table_admin": ["tests/system/v2_client/test_table_admin.py"],
}

# (passed, skipped) of each group against Google's emulator (cbtemulator, from the Google
# Cloud CLI 528.0.0's google-cloud-cli-bigtable-emulator): none fails there.
EXPECTED = {
    "data": (128, 133),
    "v2_data_api": (32, 3),
    "v2_table_admin": (6, 6),
}

# What the suite's nox session `system_emulated` sets, besides the endpoint.
EMULATOR_ENV = {"GOOGLE_CLOUD_PROJECT": "emulated-test-project"}

# Settings that would make the suite use resources made elsewhere (an instance, a table, a
# KMS key), and credentials, which emulator mode does not use.
UNSET = ["BIGTABLE_TEST_INSTANCE", "BIGTABLE_TEST_TABLE", "KMS_KEY_NAME",
         "GOOGLE_APPLICATION_CREDENTIALS"]


class BasaltBigtableServer(BasaltServer):
    """A `basalt server` on free ports; `address` is its Bigtable gateway's."""

    def __init__(self):
        super().__init__()
        self.address = self.bigtable


class RunningEndpoint:
    """A gateway someone else started and will stop."""

    def __init__(self, address):
        self.address = address

    def alive(self):
        return True

    def log(self):
        return ""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def extract_tests(sdists, work):
    """The sdist's `tests/` directory, alone in `work/run` (without the sdist's copy of the
    library, which would shadow the installed one)."""
    (archive,) = glob.glob(os.path.join(sdists, "google_cloud_bigtable-*.tar.gz"))
    with tarfile.open(archive) as t:
        t.extractall(os.path.join(work, "sdist"), filter="data")
    (root,) = glob.glob(os.path.join(work, "sdist", "google_cloud_bigtable-*"))
    assert os.path.basename(root) == f"google_cloud_bigtable-{VERSION}", root
    installed = importlib.metadata.version(PACKAGE)
    assert installed == VERSION, f"{PACKAGE} {installed} installed, the tests are {VERSION}'s"
    run = os.path.join(work, "run")
    os.makedirs(run)
    shutil.copytree(os.path.join(root, "tests"), os.path.join(run, "tests"))
    return run


def counts(junit):
    """(passed, failed, errors, skipped) from pytest's JUnit XML report."""
    totals = [0, 0, 0, 0]
    for suite in ElementTree.parse(junit).getroot().iter("testsuite"):
        tests, failures, errors, skipped = (int(suite.get(k, 0)) for k in
                                            ("tests", "failures", "errors", "skipped"))
        totals[0] += tests - failures - errors - skipped
        totals[1] += failures
        totals[2] += errors
        totals[3] += skipped
    return tuple(totals)


def main(group, sdists, endpoint=None):
    start = (lambda: RunningEndpoint(endpoint)) if endpoint else BasaltBigtableServer
    with tempfile.TemporaryDirectory() as work, start() as server:
        run = extract_tests(sdists, work)
        junit = os.path.join(work, "report.xml")
        env = {k: v for k, v in os.environ.items() if k not in UNSET}
        env.update(EMULATOR_ENV, BIGTABLE_EMULATOR_HOST=server.address)
        # Each test's outcome as it ends, and the stacks of one stuck for 5 minutes: a run
        # cut short by the test runner's time limit still tells where it was.
        args = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-rfEs",
                "-o", "faulthandler_timeout=300", f"--junitxml={junit}", *GROUPS[group]]
        print("$", " ".join(args), f"BIGTABLE_EMULATOR_HOST={server.address}", flush=True)
        code = subprocess.run(args, env=env, cwd=run).returncode
        passed, failed, errors, skipped = counts(junit) if os.path.exists(junit) else (0,) * 4
        problems = []
        if code != 0 or failed or errors:
            problems.append(f"pytest exited {code}: {failed} failed, {errors} errors")
        if (passed, skipped) != EXPECTED[group]:
            problems.append(f"{passed} passed and {skipped} skipped; the emulator gives "
                            f"{EXPECTED[group][0]} and {EXPECTED[group][1]}")
        if not server.alive():
            problems.append("the server died")
        if problems:
            log = server.log()
            if log:
                tail = log.splitlines()[-200:]
                print("--- the server's log (its end) ---", *tail, sep="\n")
            print(f"{group}: " + "; ".join(problems))
            sys.exit(1)
        print(f"{group}: {passed} passed, {skipped} skipped, as against the emulator")


if __name__ == "__main__":
    rest = sys.argv[3:]
    if len(sys.argv) < 3 or sys.argv[1] not in GROUPS:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2],
         endpoint=rest[rest.index("--endpoint") + 1] if "--endpoint" in rest else None)
