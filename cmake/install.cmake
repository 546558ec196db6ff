# What `cmake --install` and the Debian package (cmake/package.cmake) put in place: the binary, the manual page
# and the changelog gzip-compressed as Debian wants them (-9, -n: no name or time stamp, so builds are the same
# bytes), bash completion where bash-completion loads it on demand, and the README and copyright file.
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
# The CSI plugin, which `tensorfs csi` runs (cmake/csi.cmake): a helper, not a command of its own.
install(TARGETS tensorfs-csi RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/tensorfs)
install(FILES ${TENSORFS_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES completion/tensorfs.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME tensorfs)
install(FILES README.md packaging/copyright ${TENSORFS_CHANGELOG} DESTINATION ${CMAKE_INSTALL_DOCDIR})
