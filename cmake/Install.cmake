# `make install` / `cmake --install` (DESTDIR honoured) and a Debian package (`cpack -G DEB`):
# the binary, the SPANK plugin in Slurm's plugin directory, man pages generated from the CLI's
# own --help, bash and zsh completion, and the deploy/ examples.
include(GNUInstallDirs)
# Debian's slurmd loads plugins from lib/<multiarch>/slurm-wlm under the prefix (/usr).
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(plugin_default "lib/${CMAKE_LIBRARY_ARCHITECTURE}/slurm-wlm")
else()
  set(plugin_default "${CMAKE_INSTALL_LIBDIR}/slurm")
endif()
set(GPUBIND_SLURM_PLUGIN_DIR "${plugin_default}" CACHE STRING "Where slurmd loads plugins from, relative to the prefix")

# Man pages: scripts/gen-man.sh runs the built binary's help (one source for both).
set(man_dir "${CMAKE_BINARY_DIR}/man")
add_custom_command(OUTPUT "${man_dir}/gpubind.1"
  COMMAND "${PROJECT_SOURCE_DIR}/scripts/gen-man.sh" "$<TARGET_FILE:gpubind>" "${man_dir}"
  DEPENDS gpubind "${PROJECT_SOURCE_DIR}/scripts/gen-man.sh"
  COMMENT "Generating man pages from gpubind --help")
add_custom_target(man ALL DEPENDS "${man_dir}/gpubind.1")

install(TARGETS gpubind RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
# hwloc discovery, loaded by the binary only when it must discover a topology, and watch --listen's
# HTTP server, loaded only for --listen (src/CMakeLists.txt).
install(TARGETS gpubind_hwloc_module gpubind_http_module gpubind_yaml_module LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}/gpubind")
if(TARGET gpubind_podresources_module)
  install(TARGETS gpubind_podresources_module LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}/gpubind")
endif()
if(TARGET gpubind_spank)
  install(TARGETS gpubind_spank LIBRARY DESTINATION "${GPUBIND_SLURM_PLUGIN_DIR}")
endif()
install(DIRECTORY "${man_dir}/" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1" FILES_MATCHING PATTERN "*.1")
install(FILES "${PROJECT_SOURCE_DIR}/deploy/completion/gpubind.bash"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/bash-completion/completions" RENAME gpubind)
install(FILES "${PROJECT_SOURCE_DIR}/deploy/completion/_gpubind" DESTINATION "${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/deploy/" DESTINATION "${CMAKE_INSTALL_DATADIR}/gpubind/deploy")
install(FILES "${PROJECT_SOURCE_DIR}/README.md" "${PROJECT_SOURCE_DIR}/docs/cli.md" "${PROJECT_SOURCE_DIR}/docs/ARCHITECTURE.md"
        DESTINATION "${CMAKE_INSTALL_DOCDIR}")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpubind)
set(CPACK_PACKAGE_VENDOR "gpubind")
set(CPACK_PACKAGE_CONTACT "gpubind developers <gpubind@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "bind GPU workers to the CPUs, memory and NIC nearest their GPU")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the libraries the binary and module link (libhwloc15, libc6)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "slurmd, openmpi-bin")
include(CPack)
