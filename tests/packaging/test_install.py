"""tensorfs installed with pip into fresh venvs, as users install it (issue 47), with no package index.

- The wheel scripts/package.sh made beside the .deb (TENSORFS_WHEEL), installed in a venv of /usr/bin/python3 with
  --system-site-packages (Debian's numpy and torch): the installed package's arrays hold the file's values, with
  numpy and torch, and with torch alone (numpy blocked).
- The same wheel in a venv of /usr/bin/python3 without --system-site-packages: no numpy, no torch.
- The backend's wheel tag is one that each interpreter's pip installs, and pyproject.toml says what
  src/python/METADATA.in says.

scripts/test.sh runs these once per CI run, after the plain suite (not under ctest, which runs twice):
TENSORFS_WHEEL=build/tensorfs-*.whl /usr/bin/python3 -m pytest tests/packaging. pip building the source tree for a
second Python is tests/packaging/source_install.py, run by scripts/check-pip-source: it compiles the engine once more.
"""
import glob
import os
import re

import pytest

from pip_venvs import DEBIAN_PYTHON, PIP_OFFLINE, ROOT, check, interpreter, make_venv, run, second_python


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


def test_wheel_in_a_plain_venv_of_debian_python(tmp_path, wheel):
    """The CI's wheel in a fresh venv without site packages: no numpy, no torch; the module imports and reads."""
    venv_python = make_venv(tmp_path, DEBIAN_PYTHON, system_site_packages=False)
    run([venv_python, "-m", "pip", "install"] + PIP_OFFLINE + [wheel])
    check(venv_python, "no", "no", cwd=tmp_path)
