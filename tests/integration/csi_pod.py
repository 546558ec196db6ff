"""A "pod" for the CSI tests, run as `unshare --mount --propagation private python3 csi_pod.py VOLUME` with a JSON
list of checks on stdin: in its own mount namespace it has a /dev without fuse (a pod cannot mount), and sees the
published folder only through a bind mount at /mnt/volume, as a container sees its volume. It checks every file as
root, then again as the unprivileged uid 65534, and prints one JSON line per pass:
{"uid": U, "checked": N, "failures": [...]}.

A check is {"file": path under the volume, "expected": a file outside, "how": "f32" | "cmp"}: "f32" compares the
file's float32 values with the expected ones bit for bit (NaN matching NaN) with numpy, "cmp" runs cmp(1).
`--loop` repeats the passes until a line arrives on stdin after the checks (a reader that goes on while the test
kills and restarts the plugin), then prints the number of passes and failures; `--hold FILE` instead reads FILE
and prints the error it ends with (a reader stuck on a server that stopped answering); `--keep FILE` keeps FILE
open until a line arrives on stdin (a pod that holds its volume)."""
import json
import os
import select
import shutil
import stat
import subprocess
import sys

import numpy as np

from tensorfs_mount import same_floats  # the test's environment is the pod's

NOBODY = 65534
ROOT = "/mnt"
VOLUME = os.path.join(ROOT, "volume")
EXPECTED = os.path.join(ROOT, "expected")


def mount(*args):
    subprocess.run(["mount", *args], check=True, capture_output=True, timeout=60)


def become_a_pod(target):
    """A tmpfs /dev holding null, zero and urandom (no fuse), and the volume bound at /mnt/volume."""
    mount("-t", "tmpfs", "-o", "mode=755,size=1m", "pod-dev", "/dev")
    for name, minor in (("null", 3), ("zero", 5), ("urandom", 9)):
        os.mknod(os.path.join("/dev", name), stat.S_IFCHR | 0o666, os.makedev(1, minor))
    mount("-t", "tmpfs", "-o", "mode=755,size=64m", "pod-root", ROOT)
    os.mkdir(VOLUME)
    os.mkdir(EXPECTED, 0o755)
    mount("--bind", target, VOLUME)


def fuse_refused():
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError:
        return True
    return False


def place_expected(checks):
    """Copies of the expected files where uid 65534 can read them (the tests' own folders are root's alone)."""
    for number, check in enumerate(checks):
        copy = os.path.join(EXPECTED, str(number))
        shutil.copyfile(check["expected"], copy)
        os.chmod(copy, 0o644)
        check["copy"] = copy


def failures_of(checks):
    failures = []
    for check in checks:
        path = os.path.join(VOLUME, check["file"])
        try:
            if check["how"] == "f32":
                if not same_floats(np.fromfile(check["copy"], dtype="<f4"), np.fromfile(path, dtype="<f4")):
                    failures.append(f"{check['file']}: values differ")
            else:
                result = subprocess.run(["cmp", check["copy"], path], capture_output=True, text=True, timeout=60)
                if result.returncode != 0:
                    failures.append(f"{check['file']}: {result.stdout.strip()}{result.stderr.strip()}")
        except OSError as error:
            failures.append(f"{check['file']}: {error}")
    return failures


def as_nobody(work):
    """work() in a child process running as uid and gid 65534."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        os.write(writer, json.dumps(work()).encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as f:
        text = f.read()
    os.waitpid(pid, 0)
    return json.loads(text)


def stop_asked():
    return bool(select.select([sys.stdin], [], [], 0)[0])


def main():
    become_a_pod(sys.argv[1])
    if not fuse_refused():
        print(json.dumps({"error": "/dev/fuse opened in the pod"}), flush=True)
        return 1
    if sys.argv[2:3] == ["--keep"]:
        with open(os.path.join(VOLUME, sys.argv[3]), "rb"):
            print(json.dumps({"open": sys.argv[3]}), flush=True)
            sys.stdin.readline()
        return 0
    if sys.argv[2:3] == ["--hold"]:
        print(json.dumps({"reading": sys.argv[3]}), flush=True)
        try:
            with open(os.path.join(VOLUME, sys.argv[3]), "rb") as f:
                f.read()
            print(json.dumps({"ended": "read"}), flush=True)
        except OSError as error:
            print(json.dumps({"ended": os.strerror(error.errno)}), flush=True)
        return 0
    checks = json.loads(sys.stdin.readline())
    place_expected(checks)
    if sys.argv[2:3] == ["--loop"]:
        passes, failures = 0, []
        while True:
            failures += failures_of(checks)
            passes += 1
            if passes == 1:
                print(json.dumps({"started": True}), flush=True)
            if stop_asked():
                break
        print(json.dumps({"passes": passes, "failures": failures}), flush=True)
        return 0
    print(json.dumps({"uid": 0, "checked": len(checks), "failures": failures_of(checks)}), flush=True)
    print(json.dumps({"uid": NOBODY, "checked": len(checks), "failures": as_nobody(lambda: failures_of(checks))}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
