"""What the pip install checks share: running commands with their output shown, interpreters and their venvs, and
check_installed.py run by a venv's Python from outside the source tree."""
import os
import subprocess
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "tests", "packaging", "check_installed.py")
CHECKPOINT = os.path.join(ROOT, "tests", "data", "vectors", "safetensors", "all_dtypes.safetensors")
DEBIAN_PYTHON = "/usr/bin/python3"
# pip must reach no index: every install here is offline, and would fail rather than fetch.
PIP_OFFLINE = ["--no-index", "--disable-pip-version-check", "--no-cache-dir"]


def run(command, **kwargs):
    started = time.monotonic()
    result = subprocess.run([str(c) for c in command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, **kwargs)
    took = time.monotonic() - started
    print(f"$ {' '.join(str(c) for c in command)}  ({took:.1f} s)\n{result.stdout}")
    assert result.returncode == 0, f"exit {result.returncode}: {command}\n{result.stdout}"
    return result.stdout


def interpreter(python):
    """The interpreter a command runs (a pyenv shim runs one of pyenv's), and its version."""
    out = subprocess.run([python, "-c", "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])"],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.split("\n")
    return out[0], tuple(int(p) for p in out[1].split("."))


def second_python():
    """A CPython 3.9+ other than Debian's, with its headers: TENSORFS_SECOND_PYTHON, else the first python3 on PATH
    that is not /usr/bin/python3 (pyenv's). None when there is none."""
    debian = os.path.realpath(DEBIAN_PYTHON)
    candidates = [os.environ["TENSORFS_SECOND_PYTHON"]] if os.environ.get("TENSORFS_SECOND_PYTHON") else [
        os.path.join(folder, "python3") for folder in os.environ.get("PATH", "").split(os.pathsep)]
    for candidate in candidates:
        if not os.access(candidate, os.X_OK):
            continue
        try:
            executable, version = interpreter(candidate)
        except (OSError, subprocess.CalledProcessError):
            continue
        if os.path.realpath(executable) != debian and version >= (3, 9):
            return executable
    return None


def make_venv(tmp_path, python, system_site_packages):
    venv = tmp_path / "venv"
    run([python, "-m", "venv"] + (["--system-site-packages"] if system_site_packages else []) + [venv])
    return venv / "bin" / "python"


def check(venv_python, numpy, torch, block_numpy=False, cwd=None):
    # From a folder outside the source tree: nothing but the venv's packages can be found.
    command = [venv_python, "-I", CHECK, CHECKPOINT, "--numpy", numpy, "--torch", torch]
    return run(command + (["--block-numpy"] if block_numpy else []), cwd=cwd)
