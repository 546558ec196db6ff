# The Debian package tensorfs_VERSION_amd64.deb, made by CPack's DEB generator (scripts/package.sh configures
# the build for it and runs cpack). It holds what cmake/install.cmake installs, under /usr. dpkg-shlibdeps
# computes the library dependencies from the binary and the Python module; fuse3 is added for fusermount3
# (unmounting as a user) and mount.fuse3 (the fstab form). The Python package is for the python3 the module was
# built for, and imports numpy; the command works without them, so they are recommended, not required.
set(CPACK_GENERATOR DEB)
# What the package holds, as one target: make then compiles the four side by side on every core, where
# `--target a b c d` builds them one after the other, each leaving cores idle at its end (docs/ci.md).
add_custom_target(packaged_binaries)
add_dependencies(packaged_binaries tensorfs tensorfs-csi tensorfs-holder tensorfs_python)
set(CPACK_PACKAGE_NAME tensorfs)
set(CPACK_PACKAGE_VENDOR "tensorfs maintainers")
set(CPACK_PACKAGE_CONTACT "tensorfs maintainers <maintainers@users.noreply.a-seed-48f68a8f.example>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "mount model checkpoints as trees of plain files")
# The extended description; CPack puts the summary above it as the synopsis and indents each line by one space.
set(CPACK_PACKAGE_DESCRIPTION "tensorfs is a FUSE filesystem that mounts a model checkpoint (safetensors,
GGUF or PyTorch; on the local disk, a web server, the Hugging Face Hub or
S3) read-only, with one folder per tensor holding its stored bytes, its
description and its values as float32, bfloat16 and float16, and the whole
model as one safetensors file. Remote sources are fetched by range requests
through a disk cache, only where reads touch. The Python package tensorfs
reads the same sources into torch tensors and numpy arrays without a mount,
with the calls of safetensors (safe_open, get_tensor, get_slice). `tensorfs
csi` is a Kubernetes CSI node plugin that mounts models as volumes of pods.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS fuse3)
math(EXPR TENSORFS_PYTHON_NEXT_MINOR "${Python_VERSION_MINOR} + 1")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3 (>= ${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}), \
python3 (<< ${Python_VERSION_MAJOR}.${TENSORFS_PYTHON_NEXT_MINOR}), python3-numpy")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS python3-torch)
# Byte code of the Python package: compiled at install, removed before removal (packaging/postinst, prerm).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/postinst ${PROJECT_SOURCE_DIR}/packaging/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Folders the package creates get Debian's 0755, whatever the umask of the build.
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
  OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

# Debian wants the latest changelog entry to be the package's version: fail here rather than ship a mismatch.
file(STRINGS ${PROJECT_SOURCE_DIR}/packaging/changelog TENSORFS_CHANGELOG_TOP LIMIT_COUNT 1)
if(NOT TENSORFS_CHANGELOG_TOP MATCHES "^tensorfs \\(${PROJECT_VERSION}\\) ")
  message(FATAL_ERROR "packaging/changelog's first entry is not version ${PROJECT_VERSION}: add one")
endif()

include(CPack)
