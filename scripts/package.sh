#!/usr/bin/env bash
# Builds the Debian package tensorfs_VERSION_ARCH.deb in build-package/ (or the folder given as $1, with extra
# cmake arguments after it) and prints its path on stdout; the build's output goes to stderr. The binary is
# compiled with Debian's flags (dpkg-buildflags, all hardening on) and stripped; cmake/package.cmake says what goes
# in. Install it with `apt-get install ./build-package/tensorfs_*.deb`.
# Beside it, in the same folder, the Python wheel tensorfs-VERSION-cpXY-cpXY-linux_x86_64.whl for the python the
# module is built for (TENSORFS_PYTHON, /usr/bin/python3): pip makes it through pyproject.toml's backend from this
# build folder, so it holds the very module the .deb has (stripped alike). Install it with `pip install
# build-package/tensorfs-*.whl` in a venv of that python; tests/packaging tests it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-package}
shift || true
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
# Only the binaries (tensorfs and its CSI plugin), the Python module and the compressed pages are built (the tests
# and benchmarks are not packaged); cpack would otherwise build everything first. The prefix is the package's, /usr:
# the Python package goes where Debian's own go (cmake/install.cmake).
cmake -S . -B "$dir" -DTENSORFS_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
  -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_CXX_FLAGS="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CXXFLAGS)" \
  -DCMAKE_EXE_LINKER_FLAGS="$(dpkg-buildflags --get LDFLAGS)" \
  -DCMAKE_MODULE_LINKER_FLAGS="$(dpkg-buildflags --get LDFLAGS)" "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)" --target packaged_binaries >&2  # cmake/package.cmake
rm -f "$dir"/tensorfs_*.deb "$dir"/tensorfs-*.whl
(cd "$dir" && cpack -G DEB >/dev/null)
# The wheel: the build folder is already configured and built for this python, so pip's build configures it again
# with nothing changed and zips BUILD/python (packaging/python/tensorfs_build.py). No package index is needed.
python=$(sed -n 's/^TENSORFS_PYTHON:FILEPATH=//p' "$dir/CMakeCache.txt")
"$python" -m pip wheel --quiet --no-build-isolation --no-index --no-deps --no-cache-dir --disable-pip-version-check \
  --config-settings build-dir="$(realpath "$dir")" --wheel-dir "$dir" . >&2
ls "$dir"/tensorfs-*.whl >&2
ls "$dir"/tensorfs_*.deb
