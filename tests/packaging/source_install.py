"""pip builds the module from this source tree for a second Python (issue 47): the pyenv python3 first on PATH on the
developers' machines, or TENSORFS_SECOND_PYTHON. In a venv of that interpreter without numpy or torch,
`pip install --no-build-isolation --no-index .` configures and compiles the engine and the module against its
headers, and the installed package imports and reads without either.

Not collected by `pytest tests/packaging` (CI's run: a fifth compile of the engine does not fit CI's 30 minutes);
scripts/check-pip-source runs it: /usr/bin/python3 -m pytest tests/packaging/source_install.py."""
import os

from pip_venvs import PIP_OFFLINE, ROOT, check, make_venv, run, second_python


def test_source_with_a_second_python(tmp_path):
    python = second_python()
    assert python is not None, "no second Python (3.9+, not /usr/bin/python3) on PATH: set TENSORFS_SECOND_PYTHON"
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
