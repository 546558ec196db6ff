"""The PEP 517 build backend of the tensorfs Python package (pyproject.toml names it, from this folder).

It builds the package the way the project's CMake build does (cmake/python.cmake: the native module
tensorfs._tensorfs, the package's Python files and METADATA in BUILD/python) and zips that into a wheel. It needs
nothing but the standard library of Python 3.9 or later, so that `pip install --no-build-isolation --no-index PATH`
works in a fresh venv with no package index: a venv brings pip and (sometimes) setuptools, and this machine's pip
reaches no index to fetch a backend from.

The module is built for the interpreter that runs this backend (sys.executable: a venv's own python, not
/usr/bin/python3), against its headers, with Debian's pybind11 (pybind11-dev) and the Debian -dev packages that
scripts/install-deps.sh installs; cmake 3.25 or later must be on PATH. The wheel holds the module with the engine
(its libraries, one per layer) linked in statically, and libfuse3, libcurl, libsimdjson, libcrypto, libexpat, zlib
and libstdc++ linked dynamically from the system: a linux_x86_64 wheel for machines with those libraries (Debian 12
or alike), not a manylinux one.

Config settings (pip: --config-settings KEY=VALUE, -C from pip 23.1 on; python -m build: -C KEY=VALUE):
  build-dir=PATH   build there and keep it (an incremental rebuild next time); by default, a temporary folder that
                   is removed afterwards. A folder already configured must be for this interpreter (TENSORFS_PYTHON):
                   then only -DTENSORFS_PYTHON is given to cmake and its other settings stay as they are
                   (scripts/package.sh makes its wheel from its own build folder this way).
  cmake-args=ARGS  more arguments for cmake's configure step, split as a shell would (-DTENSORFS_WERROR=ON).
  strip=false      keep the module's debug information (by default a new build folder compiles without it, and
                   the module is stripped, as the .deb's is).
The editable hooks (pip install -e) build in build-dir, by default build-editable/ in the source tree, and install a
.pth file that puts BUILD/python on sys.path: after changing the sources, `cmake --build BUILD --target
tensorfs_python` (or pip install -e again) brings the installed package up to date.
"""
import base64
import csv
import hashlib
import io
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

NAME = "tensorfs"
ROOT = Path(__file__).resolve().parents[2]
TARGET = "tensorfs_python"
# The files of the package that cmake/python.cmake puts in BUILD/python/tensorfs beside the native module.
PACKAGE_FILES = ("__init__.py", "__init__.pyi", "py.typed")


def _log(message):
    print(f"tensorfs_build: {message}", file=sys.stderr, flush=True)


def _version():
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    match = re.search(r"project\(\s*tensorfs\s+VERSION\s+([0-9][0-9.]*)", text)
    if not match:
        raise RuntimeError("CMakeLists.txt: no `project(tensorfs VERSION X.Y.Z ...)` to take the version from")
    return match.group(1)


def _metadata():
    """METADATA as cmake/python.cmake configures it from src/python/METADATA.in (only @PROJECT_VERSION@)."""
    text = (ROOT / "src/python/METADATA.in").read_text(encoding="utf-8").replace("@PROJECT_VERSION@", _version())
    left = re.findall(r"@[A-Za-z_]+@", text)
    if left:
        raise RuntimeError(f"src/python/METADATA.in: {', '.join(left)} is set by cmake only; the backend needs it too")
    return text


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def _tag():
    """The wheel's tag for this interpreter, by the rules of PEP 425 and the packaging library: cpXY, the ABI of its
    extension modules (SOABI: cp311, cp313t for a free-threaded build, cp311d for a debug one), and the platform
    (linux_x86_64; a 32-bit interpreter on a 64-bit kernel is linux_i686)."""
    if sys.implementation.name != "cpython":
        raise RuntimeError(f"tensorfs builds for CPython only, not {sys.implementation.name}")
    soabi = sysconfig.get_config_var("SOABI") or ""
    parts = soabi.split("-")
    if len(parts) < 2 or parts[0] != "cpython":
        raise RuntimeError(f"this Python's SOABI {soabi!r} is not CPython's")
    abi = "cp" + parts[1]
    interpreter = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    if not platform.startswith("linux_"):
        raise RuntimeError(f"tensorfs builds on Linux only (FUSE, /proc), not {platform}")
    if sys.maxsize <= 2**32:
        platform = {"linux_x86_64": "linux_i686", "linux_aarch64": "linux_armv8l"}.get(platform, platform)
    return f"{interpreter}-{abi}-{platform}"


def _wheel_file(tag):
    return f"Wheel-Version: 1.0\nGenerator: tensorfs_build (packaging/python)\nRoot-Is-Purelib: false\nTag: {tag}\n"


def _settings(config_settings):
    settings = dict(config_settings or {})
    known = {"build-dir", "cmake-args", "strip"}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"unknown config setting {', '.join(unknown)}: tensorfs_build takes {', '.join(sorted(known))}")
    args = settings.get("cmake-args", [])
    # pip passes a setting given several times as a list.
    args = [a for item in ([args] if isinstance(args, str) else args) for a in shlex.split(item)]
    strip = str(settings.get("strip", "true")).lower() not in ("false", "0", "no", "off")
    return settings.get("build-dir"), args, strip


def _cache_value(build_dir, name):
    cache = Path(build_dir) / "CMakeCache.txt"
    if not cache.exists():
        return None
    for line in cache.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(name + ":"):
            return line.split("=", 1)[1]
    return None


def _same_python(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a == b


def _run(command):
    _log("$ " + " ".join(shlex.quote(str(c)) for c in command))
    # cmake's output goes to stderr with ours: pip shows it when the build fails, or with -v. (A frontend that
    # runs hooks in its own process may have replaced sys.stderr with an object that is no file.)
    try:
        output = sys.stderr.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        output = None
    subprocess.run([str(c) for c in command], check=True, stdout=output)


def _build(build_dir, cmake_args, strip=True):
    """Configures and builds the module for sys.executable in build_dir; returns BUILD/python."""
    if shutil.which("cmake") is None:
        raise RuntimeError("tensorfs needs cmake (3.25 or later) and the Debian -dev packages of "
                           "scripts/install-deps.sh to build its Python module")
    python = sys.executable
    configured = _cache_value(build_dir, "TENSORFS_PYTHON")
    command = ["cmake", "-S", ROOT, "-B", build_dir, f"-DTENSORFS_PYTHON={python}"]
    if configured is None:
        # A folder of its own: the module and what it links, no tests (their tools need not be installed). The
        # project's build type (RelWithDebInfo: -O2, as the .deb) without the debug information that stripping
        # would drop anyway: it is a good part of the compile.
        command += ["-DBUILD_TESTING=OFF"]
        if strip:
            command += ["-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG"]
    elif not _same_python(configured, python):
        raise RuntimeError(f"{build_dir} is configured for {configured}, not for {python}, which runs this build: "
                           "give another build-dir")
    _run(command + cmake_args)
    jobs = [] if os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") else ["-j", str(os.cpu_count() or 1)]
    _run(["cmake", "--build", build_dir, "--target", TARGET] + jobs)
    return Path(build_dir) / "python"


def _package_files(python_dir):
    """The package's files in BUILD/python/tensorfs: the module built for this interpreter and the Python files."""
    package = python_dir / NAME
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    module = package / f"_tensorfs{suffix}"
    if not module.exists():
        raise RuntimeError(f"the build made no {module}: is pybind11 finding another Python than {sys.executable}?")
    return [module] + [package / name for name in PACKAGE_FILES]


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"sha256={digest}"


def _epoch():
    """The time stamp of every member: SOURCE_DATE_EPOCH when set (reproducible builds), else now."""
    return int(os.environ.get("SOURCE_DATE_EPOCH", time.time()))


class _WheelWriter:
    def __init__(self, path):
        self._zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self._records = []
        when = max(_epoch(), 315532800)  # zip's dates start in 1980
        self._date = time.gmtime(when)[:6]

    def add(self, name, data, executable=False):
        info = zipfile.ZipInfo(name, self._date)
        info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data)
        self._records.append((name, _record_hash(data), str(len(data))))

    def close(self, record_name):
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerows(self._records + [(record_name, "", "")])
        self.add_unrecorded(record_name, out.getvalue().encode("utf-8"))
        self._zip.close()

    def add_unrecorded(self, name, data):
        info = zipfile.ZipInfo(name, self._date)
        info.external_attr = (0o644 | stat.S_IFREG) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data)


def _write_wheel(wheel_directory, files, metadata, extra=()):
    """Writes the wheel of `files` ((name in the wheel, bytes, executable)) and returns its file name."""
    tag = _tag()
    dist_info = _dist_info()
    wheel_name = f"{NAME}-{_version()}-{tag}.whl"
    path = Path(wheel_directory) / wheel_name
    writer = _WheelWriter(path)
    try:
        for name, data, executable in list(files) + list(extra):
            writer.add(name, data, executable)
        writer.add(f"{dist_info}/METADATA", metadata.encode("utf-8"))
        writer.add(f"{dist_info}/LICENSE", (ROOT / "LICENSE").read_bytes())
        writer.add(f"{dist_info}/WHEEL", _wheel_file(tag).encode("utf-8"))
        writer.close(f"{dist_info}/RECORD")
    except BaseException:
        writer._zip.close()
        path.unlink()
        raise
    _log(f"wrote {path}")
    return wheel_name


def _module_bytes(module, strip):
    if not strip or shutil.which("strip") is None:
        return module.read_bytes()
    with tempfile.TemporaryDirectory(prefix="tensorfs-strip-") as scratch:
        copy = Path(scratch) / module.name
        shutil.copyfile(module, copy)
        # As Debian's dh_strip does for a shared object: its symbols for linking stay, debug information goes.
        _run(["strip", "--strip-unneeded", "--remove-section=.comment", "--remove-section=.note", copy])
        return copy.read_bytes()


# ---- PEP 517 hooks ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = Path(metadata_directory) / _dist_info()
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(_metadata(), encoding="utf-8")
    (dist_info / "WHEEL").write_text(_wheel_file(_tag()), encoding="utf-8")
    return dist_info.name


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build_dir, cmake_args, strip = _settings(config_settings)
    scratch = None
    if build_dir is None:
        scratch = tempfile.mkdtemp(prefix="tensorfs-build-")
        build_dir = scratch
    try:
        python_dir = _build(os.path.abspath(build_dir), cmake_args, strip)
        files = []
        for path in _package_files(python_dir):
            if path.name.startswith("_tensorfs"):
                files.append((f"{NAME}/{path.name}", _module_bytes(path, strip), True))
            else:
                files.append((f"{NAME}/{path.name}", path.read_bytes(), False))
        metadata = (python_dir / _dist_info() / "METADATA").read_text(encoding="utf-8")
        return _write_wheel(wheel_directory, files, metadata)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    build_dir, cmake_args, _ = _settings(config_settings)
    if build_dir is None:
        build_dir = ROOT / "build-editable"
    python_dir = _build(os.path.abspath(build_dir), cmake_args, strip=False)
    _package_files(python_dir)  # it was built for this interpreter
    metadata = (python_dir / _dist_info() / "METADATA").read_text(encoding="utf-8")
    pth = (str(python_dir.resolve()) + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, [(f"_{NAME}_editable.pth", pth, False)], metadata)


def _source_files():
    """The files of the source tree, relative to ROOT: git's (tracked, and new ones it does not ignore) in a
    checkout, else every file but build folders and byte code (an unpacked sdist)."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                check=True, stdout=subprocess.PIPE).stdout.decode("utf-8").split("\0")
        return sorted({name for name in listed if name and (ROOT / name).is_file()})
    files = []
    for folder, dirs, names in os.walk(ROOT):
        relative = Path(folder).relative_to(ROOT)
        dirs[:] = sorted(d for d in dirs if not (relative == Path(".") and d.startswith("build"))
                         and d not in (".git", "__pycache__"))
        files += [str(relative / n) for n in names if not n.endswith(".pyc")]
    return sorted(f[2:] if f.startswith("./") else f for f in files)


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{_version()}"
    path = Path(sdist_directory) / f"{base}.tar.gz"
    when = _epoch()

    def member(name, size, mode):
        info = tarfile.TarInfo(f"{base}/{name}")
        info.size, info.mtime, info.mode = size, when, mode
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    metadata = _metadata().encode("utf-8")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name in _source_files():
            if name == "PKG-INFO":
                continue
            source = ROOT / name
            mode = 0o755 if os.access(source, os.X_OK) else 0o644
            with open(source, "rb") as f:
                tar.addfile(member(name, source.stat().st_size, mode), f)
        tar.addfile(member("PKG-INFO", len(metadata), 0o644), io.BytesIO(metadata))
    _log(f"wrote {path}")
    return path.name
