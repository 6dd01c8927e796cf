"""Makes the Python environment of one directory of client tests (`tests/thrift`,
`tests/bigtable`, `tests/rest`): a venv with the pinned packages of its `requirements.txt`,
and the source distributions its `sdists.txt` names (clients whose own tests ship only
there) in `VENV_DIR/sdists`. Safe to run from several test processes at once; done once per
directory and set of pins.

    python3 setup_env.py SUITE_DIR VENV_DIR
"""

import fcntl
import os
import subprocess
import sys


def pins(path):
    """The requirement lines of a pin file, comments left out."""
    if not os.path.exists(path):
        return []
    lines = (line.split("#", 1)[0].strip() for line in open(path))
    return [line for line in lines if line]


def main(suite, venv):
    os.makedirs(os.path.dirname(os.path.abspath(venv)), exist_ok=True)
    with open(venv + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        requirements = os.path.join(suite, "requirements.txt")
        sdists = pins(os.path.join(suite, "sdists.txt"))
        ready = os.path.join(venv, "ready")
        want = open(requirements).read() + "\n# sdists: " + " ".join(sdists) + "\n"
        if os.path.exists(ready) and open(ready).read() == want:
            return
        subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
        pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "--disable-pip-version-check",
               "-q"]
        subprocess.run(pip + ["install", "-r", requirements], check=True)
        subprocess.run(pip + ["check"], check=True)
        if sdists:
            subprocess.run(pip + ["download", "--no-deps", "--no-binary", ":all:", "-d",
                                  os.path.join(venv, "sdists"), *sdists], check=True)
        with open(ready, "w") as f:
            f.write(want)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
