# The Python package `tensorfs` (src/python): the native module tensorfs._tensorfs, built with Debian's pybind11 for
# TENSORFS_PYTHON, by default Debian's /usr/bin/python3 (the python3 first on PATH may be another one), and the
# package's Python files and metadata beside it, in BUILD/python, so that PYTHONPATH=BUILD/python imports the build's
# package. pip builds it through pyproject.toml's backend (packaging/python/tensorfs_build.py), which configures
# with -DTENSORFS_PYTHON=<the interpreter running pip> and zips BUILD/python's files into a wheel: what is built here
# is what a wheel holds.
set(TENSORFS_PYTHON /usr/bin/python3 CACHE FILEPATH "The Python the tensorfs module is built for")
set(Python_EXECUTABLE ${TENSORFS_PYTHON})
find_package(Python 3 REQUIRED COMPONENTS Interpreter Development.Module)
set(PYBIND11_FINDPYTHON ON)
find_package(pybind11 2.10 CONFIG REQUIRED)

set(TENSORFS_PYTHON_BUILD_DIR ${CMAKE_CURRENT_BINARY_DIR}/python)
file(GLOB TENSORFS_PYTHON_SOURCES CONFIGURE_DEPENDS src/python/*.cpp)
# NO_EXTRAS: no link-time optimization and no stripping of pybind11's own; the visibility stays hidden. Like every
# target it compiles in batches (CMakeLists.txt): its sources all include pybind11's headers, whose parsing is most
# of the compile (36 s of CPU against 94 s file by file).
pybind11_add_module(tensorfs_python MODULE NO_EXTRAS ${TENSORFS_PYTHON_SOURCES})
set_target_properties(tensorfs_python PROPERTIES OUTPUT_NAME _tensorfs
  LIBRARY_OUTPUT_DIRECTORY ${TENSORFS_PYTHON_BUILD_DIR}/tensorfs)
# The one engine, the same libraries the command links; their symbols stay inside the module.
tensorfs_in_layer(tensorfs_python python)
target_link_options(tensorfs_python PRIVATE -Wl,--exclude-libs,ALL)

set(TENSORFS_PYTHON_FILES __init__.py __init__.pyi py.typed)
foreach(file ${TENSORFS_PYTHON_FILES})
  configure_file(src/python/tensorfs/${file} ${TENSORFS_PYTHON_BUILD_DIR}/tensorfs/${file} COPYONLY)
endforeach()
# The distribution's metadata (name, version, licence, Requires-Python, extras), as importlib.metadata and pip read
# it; the wheel's METADATA is this file.
set(TENSORFS_PYTHON_DIST_INFO tensorfs-${PROJECT_VERSION}.dist-info)
configure_file(src/python/METADATA.in ${TENSORFS_PYTHON_BUILD_DIR}/${TENSORFS_PYTHON_DIST_INFO}/METADATA @ONLY)
