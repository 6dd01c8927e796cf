"""Makes the Python environment the REST client tests run in: a venv with the pinned
clients (hbase-rest-py's own tests ship in its wheel), and starbase's source distribution
(its tests ship only there). Safe to run from several test processes at once; done once per
directory.

    python3 setup_env.py VENV_DIR
"""

import fcntl
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SDISTS = ["starbase==0.3.3"]


def main(venv):
    os.makedirs(os.path.dirname(os.path.abspath(venv)), exist_ok=True)
    with open(venv + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        requirements = os.path.join(HERE, "requirements.txt")
        ready = os.path.join(venv, "ready")
        want = open(requirements).read()
        if os.path.exists(ready) and open(ready).read() == want:
            return
        subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
        pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "--disable-pip-version-check",
               "-q"]
        subprocess.run(pip + ["install", "-r", requirements], check=True)
        subprocess.run(pip + ["download", "--no-deps", "--no-binary", ":all:", "-d",
                              os.path.join(venv, "sdists"), *SDISTS], check=True)
        with open(ready, "w") as f:
            f.write(want)


if __name__ == "__main__":
    main(sys.argv[1])
