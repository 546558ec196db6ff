# What `cmake --install` and the Debian package (cmake/package.cmake) put in place: the binary, the manual page
# and the changelog gzip-compressed as Debian wants them (-9, -n: no name or time stamp, so builds are the same
# bytes), bash completion where bash-completion loads it on demand, the README and copyright file, and the Python
# package (cmake/python.cmake) where Debian's python3 finds it.
include(GNUInstallDirs)

find_program(GZIP gzip REQUIRED)
set(TENSORFS_MAN_PAGE ${CMAKE_CURRENT_BINARY_DIR}/tensorfs.1.gz)
set(TENSORFS_CHANGELOG ${CMAKE_CURRENT_BINARY_DIR}/changelog.gz)
add_custom_command(OUTPUT ${TENSORFS_MAN_PAGE}
  COMMAND ${GZIP} -9 -n -c ${PROJECT_SOURCE_DIR}/docs/tensorfs.1 > ${TENSORFS_MAN_PAGE}
  DEPENDS ${PROJECT_SOURCE_DIR}/docs/tensorfs.1 VERBATIM)
add_custom_command(OUTPUT ${TENSORFS_CHANGELOG}
  COMMAND ${GZIP} -9 -n -c ${PROJECT_SOURCE_DIR}/packaging/changelog > ${TENSORFS_CHANGELOG}
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/changelog VERBATIM)
add_custom_target(tensorfs_docs ALL DEPENDS ${TENSORFS_MAN_PAGE} ${TENSORFS_CHANGELOG})
# Made with the binary, so that any build of it can be installed.
add_dependencies(tensorfs tensorfs_docs)

install(TARGETS tensorfs RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The CSI plugin, which `tensorfs csi` runs, and the mount holder of its DaemonSets (cmake/csi.cmake): helpers, not
# commands of their own.
install(TARGETS tensorfs-csi tensorfs-holder RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/tensorfs)
install(FILES ${TENSORFS_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES completion/tensorfs.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME tensorfs)
install(FILES README.md packaging/copyright ${TENSORFS_CHANGELOG} DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Debian's python3 reads packages of Debian's own from /usr/lib/python3/dist-packages (the .deb's prefix is /usr),
# and those installed by hand from /usr/local/lib/python3.X/dist-packages.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(TENSORFS_PYTHON_INSTALL_DIR lib/python3/dist-packages)
else()
  set(TENSORFS_PYTHON_INSTALL_DIR lib/python${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}/dist-packages)
endif()
install(TARGETS tensorfs_python LIBRARY DESTINATION ${TENSORFS_PYTHON_INSTALL_DIR}/tensorfs)
list(TRANSFORM TENSORFS_PYTHON_FILES PREPEND ${TENSORFS_PYTHON_BUILD_DIR}/tensorfs/ OUTPUT_VARIABLE python_files)
install(FILES ${python_files} DESTINATION ${TENSORFS_PYTHON_INSTALL_DIR}/tensorfs)
install(FILES ${TENSORFS_PYTHON_BUILD_DIR}/${TENSORFS_PYTHON_DIST_INFO}/METADATA
  DESTINATION ${TENSORFS_PYTHON_INSTALL_DIR}/${TENSORFS_PYTHON_DIST_INFO})
