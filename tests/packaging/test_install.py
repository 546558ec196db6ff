"""tensorfs installed with pip into fresh venvs, as users install it (issue 47), with no package index.

- The wheel scripts/package.sh made beside the .deb (TENSORFS_WHEEL), installed in a venv of /usr/bin/python3 with
  --system-site-packages (Debian's numpy and torch): the installed package's arrays hold the file's values, with
  numpy and torch, and with torch alone (numpy blocked).
- The source tree installed with `pip install --no-build-isolation --no-index` by a second Python (the pyenv
  python3 first on PATH on the developers' machines, or TENSORFS_SECOND_PYTHON), in a venv of its own without
  numpy or torch: pip builds the module for that interpreter, and the package imports and reads without either.
  On a machine with no second Python, the wheel in a venv of /usr/bin/python3 without --system-site-packages (no
  numpy, no torch) stands in for it.
- The backend's wheel tag is one that each interpreter's pip installs, and pyproject.toml says what
  src/python/METADATA.in says.

scripts/test.sh runs it once per CI run, after the plain suite (not under ctest: the source build compiles the
engine once more): TENSORFS_WHEEL=build/tensorfs-*.whl /usr/bin/python3 -m pytest tests/packaging.
"""
import glob
import os
import re
import subprocess
import time

import pytest

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


@pytest.fixture
def wheel():
    path = os.environ.get("TENSORFS_WHEEL")
    if not path:
        found = sorted(glob.glob(os.path.join(ROOT, "build*", "tensorfs-*.whl")))
        if not found:
            pytest.skip("no wheel: run scripts/package.sh (it makes one beside the .deb) or set TENSORFS_WHEEL")
        path = found[-1]
    return os.path.abspath(path)


def test_pyproject_says_what_metadata_says():
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    with open(os.path.join(ROOT, "src", "python", "METADATA.in"), encoding="utf-8") as f:
        fields = [line.split(": ", 1) for line in f.read().splitlines() if ": " in line]
    metadata = {}
    for key, value in fields:
        metadata.setdefault(key, []).append(value)
    assert metadata["Name"] == [project["name"]]
    assert project["dynamic"] == ["version"] and metadata["Version"] == ["@PROJECT_VERSION@"]
    assert metadata["Summary"] == [project["description"]]
    assert metadata["License"] == [project["license"]["text"]]
    assert metadata["Requires-Python"] == [project["requires-python"]]
    assert metadata["Classifier"] == project["classifiers"]
    assert project.get("dependencies", []) == []
    extras = project["optional-dependencies"]
    assert metadata["Provides-Extra"] == list(extras)
    assert metadata["Requires-Dist"] == [f'{req}; extra == "{extra}"' for extra, reqs in extras.items()
                                         for req in reqs]


@pytest.mark.parametrize("which", ["debian", "second"])
def test_backend_tag_is_one_pip_installs(which):
    python = DEBIAN_PYTHON if which == "debian" else second_python()
    if python is None:
        pytest.skip("no second Python on this machine")
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import tensorfs_build\n"
              "from pip._vendor.packaging import tags\n"
              "tag = tensorfs_build._tag(); supported = [str(t) for t in tags.sys_tags()]\n"
              "assert tag in supported, (tag, supported[:5]); print(tag)")
    tag = run([python, "-c", script, os.path.join(ROOT, "packaging", "python")]).strip()
    version = "%d%d" % interpreter(python)[1]
    assert tag == f"cp{version}-cp{version}-linux_x86_64"


def test_wheel_in_a_venv_of_debian_python(tmp_path, wheel):
    """The CI's wheel beside the .deb, in a fresh venv that sees Debian's numpy and torch."""
    venv_python = make_venv(tmp_path, DEBIAN_PYTHON, system_site_packages=True)
    version = "%d%d" % interpreter(DEBIAN_PYTHON)[1]
    assert re.search(rf"/tensorfs-[0-9.]+-cp{version}-cp{version}-linux_x86_64\.whl$", wheel), wheel
    run([venv_python, "-m", "pip", "install"] + PIP_OFFLINE + [wheel])
    check(venv_python, "yes", "yes", cwd=tmp_path)
    check(venv_python, "no", "yes", block_numpy=True, cwd=tmp_path)
    # The package pip installed is whole: every file of its RECORD is there with its hash.
    out = run([venv_python, "-I", "-c", "import importlib.metadata as m, hashlib, base64\n"
               "d = m.distribution('tensorfs'); bad = []\n"
               "for f in d.files:\n"
               "    if f.hash is None: continue\n"
               "    h = base64.urlsafe_b64encode(hashlib.sha256(f.read_binary()).digest()).rstrip(b'=').decode()\n"
               "    bad += [str(f)] if h != f.hash.value else []\n"
               "print(len(d.files), 'files', bad)"], cwd=tmp_path)
    assert out.strip().endswith("[]"), out


def test_source_with_a_second_python(tmp_path, wheel):
    """pip builds the module from this source tree for the venv's interpreter, which has no numpy and no torch."""
    python = second_python()
    if python is None:
        # Only where there is no second Python: Debian's, without its numpy and torch, with CI's wheel.
        print("no second Python here: the wheel in a venv of /usr/bin/python3 without --system-site-packages")
        venv_python = make_venv(tmp_path, DEBIAN_PYTHON, system_site_packages=False)
        run([venv_python, "-m", "pip", "install"] + PIP_OFFLINE + [wheel])
        check(venv_python, "no", "no", cwd=tmp_path)
        return
    include = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"]).strip()
    assert os.path.exists(os.path.join(include, "Python.h")), f"{python} has no headers in {include}"
    venv_python = make_venv(tmp_path, python, system_site_packages=False)
    # -Werror as every CI build: the module compiles cleanly against this interpreter's headers too.
    run([venv_python, "-m", "pip", "install", "--no-build-isolation", "--config-settings",
         "cmake-args=-DTENSORFS_WERROR=ON"] + PIP_OFFLINE + [ROOT], cwd=tmp_path)
    suffix = run([venv_python, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"]).strip()
    site = run([venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"]).strip()
    assert os.path.exists(os.path.join(site, "tensorfs", "_tensorfs" + suffix)), "not built for this interpreter"
    check(venv_python, "no", "no", cwd=tmp_path)
