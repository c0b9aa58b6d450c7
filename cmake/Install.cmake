# `make install` / `cmake --install` (DESTDIR honoured) and Debian packages (`cpack -G DEB`), one
# per install component:
#   core     -> gpubind:          the binary, hwloc discovery, the SPANK plugin in Slurm's plugin
#                                 directory, man pages generated from the CLI's own --help, bash and
#                                 zsh completion, the deploy/ examples; Depends only on what exec
#                                 needs (libhwloc, libc)
#   exporter -> gpubind-exporter: watch --listen's HTTP server (our own, libc only) and the
#                                 gpubind-watch systemd unit, where systemd finds it
#   k8s      -> gpubind-k8s:      k8s check's YAML reader (libyaml) and pod-resources API client
#                                 (gRPC)
# Each package carries the copyright file (packaging/copyright: Apache-2.0) and a changelog.
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

set(GPUBIND_MAINTAINER "gpubind developers <gpubind-maintainers@example.org>" CACHE STRING
  "The Debian packages' Maintainer (a site that rebuilds them sets its own)")

install(TARGETS gpubind RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT core)
# The full binary the static front hands every command but a cached exec (src/CMakeLists.txt),
# where the front looks for it: beside the modules.
if(TARGET gpubind_full)
  install(TARGETS gpubind_full RUNTIME DESTINATION "${CMAKE_INSTALL_LIBDIR}/gpubind" COMPONENT core)
  # Why the static front is static, for lintian (packaging/lintian-overrides).
  install(FILES "${PROJECT_SOURCE_DIR}/packaging/lintian-overrides" DESTINATION "${CMAKE_INSTALL_DATADIR}/lintian/overrides"
          RENAME gpubind COMPONENT core)
endif()
# Loaded by the binary only when a command needs them (src/CMakeLists.txt): hwloc discovery (core),
# watch --listen's HTTP server (exporter), k8s check's YAML and pod-resources readers (k8s).
install(TARGETS gpubind_hwloc_module LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}/gpubind" COMPONENT core)
install(TARGETS gpubind_http_module LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}/gpubind" COMPONENT exporter)
install(TARGETS gpubind_yaml_module LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}/gpubind" COMPONENT k8s)
if(TARGET gpubind_podresources_module)
  install(TARGETS gpubind_podresources_module LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}/gpubind" COMPONENT k8s)
endif()
if(TARGET gpubind_spank)
  install(TARGETS gpubind_spank LIBRARY DESTINATION "${GPUBIND_SLURM_PLUGIN_DIR}" COMPONENT core)
endif()
install(DIRECTORY "${man_dir}/" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1" COMPONENT core FILES_MATCHING PATTERN "*.1.gz")
install(FILES "${PROJECT_SOURCE_DIR}/deploy/completion/gpubind.bash"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/bash-completion/completions" RENAME gpubind COMPONENT core)
install(FILES "${PROJECT_SOURCE_DIR}/deploy/completion/_gpubind" DESTINATION "${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions" COMPONENT core)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/deploy/" DESTINATION "${CMAKE_INSTALL_DATADIR}/gpubind/deploy" USE_SOURCE_PERMISSIONS COMPONENT core)
install(FILES "${PROJECT_SOURCE_DIR}/README.md" "${PROJECT_SOURCE_DIR}/docs/cli.md" "${PROJECT_SOURCE_DIR}/docs/ARCHITECTURE.md"
        DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT core)
# The exporter's unit where systemd looks for units (the prefix's lib/systemd/system: /usr for the
# package, /usr/local for make install), so `systemctl enable --now gpubind-watch` works once the package is installed.
install(FILES "${PROJECT_SOURCE_DIR}/deploy/systemd/gpubind-watch.service"
        DESTINATION lib/systemd/system COMPONENT exporter)

# Per package: copyright and a changelog (gzip -9n), in /usr/share/doc/PACKAGE.
configure_file("${PROJECT_SOURCE_DIR}/packaging/changelog.in" "${CMAKE_BINARY_DIR}/packaging/changelog" @ONLY)
add_custom_command(OUTPUT "${CMAKE_BINARY_DIR}/packaging/changelog.gz"
  COMMAND gzip -9nkf "${CMAKE_BINARY_DIR}/packaging/changelog"
  DEPENDS "${CMAKE_BINARY_DIR}/packaging/changelog")
add_custom_target(package_changelog ALL DEPENDS "${CMAKE_BINARY_DIR}/packaging/changelog.gz")
foreach(component_package core:gpubind exporter:gpubind-exporter k8s:gpubind-k8s)
  string(REPLACE ":" ";" cp "${component_package}")
  list(GET cp 0 component)
  list(GET cp 1 package)
  install(FILES "${PROJECT_SOURCE_DIR}/packaging/copyright" "${CMAKE_BINARY_DIR}/packaging/changelog.gz"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/${package}" COMPONENT ${component})
endforeach()

# Installed binaries are stripped, their debug information kept beside them as Debian keeps it: in
# /usr/lib/debug/<the file's own path>.debug, found by gdb through the stripped file's
# .gnu_debuglink. Its own component (dbg), so `make install` / `cmake --install` runs it last and
# CPack, which strips the packages itself (CPACK_STRIP_FILES), never puts debug files in a .deb.
find_program(GPUBIND_OBJCOPY NAMES objcopy)
if(GPUBIND_OBJCOPY)
  install(CODE "set(GPUBIND_OBJCOPY \"${GPUBIND_OBJCOPY}\")" COMPONENT dbg)
  install(SCRIPT "${PROJECT_SOURCE_DIR}/cmake/StripInstalled.cmake" COMPONENT dbg)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL core exporter k8s)
set(CPACK_PACKAGE_NAME gpubind)
set(CPACK_PACKAGE_VENDOR "gpubind")
set(CPACK_PACKAGE_CONTACT "${GPUBIND_MAINTAINER}")
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put that one line before each package's own
# synopsis. Each description below is its synopsis, then its extended text (CPack indents it).
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the libraries each package's files link
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# The Slurm release series the plugin is built for (its slurm_version.h): Slurm loads a SPANK
# plugin only into that series, so the package says which.
set(spank_description "")
if(TARGET gpubind_spank)
  file(STRINGS "${SLURM_SPANK_INCLUDE_DIR}/slurm/slurm_version.h" slurm_version_line REGEX "define SLURM_VERSION_NUMBER")
  string(REGEX REPLACE ".*SLURM_VERSION_NUMBER[ \t]+0x([0-9a-fA-F]+).*" "\\1" slurm_hex "${slurm_version_line}")
  math(EXPR slurm_major "(0x${slurm_hex} >> 16) & 255")
  math(EXPR slurm_minor "(0x${slurm_hex} >> 8) & 255")
  math(EXPR slurm_micro "0x${slurm_hex} & 255")
  if(slurm_minor LESS 10)
    set(slurm_minor "0${slurm_minor}")
  endif()
  set(GPUBIND_SPANK_SLURM "${slurm_major}.${slurm_minor}")
  set(spank_description "

The SPANK plugin is built for Slurm ${GPUBIND_SPANK_SLURM} (${GPUBIND_SPANK_SLURM}.${slurm_micro}'s
headers): Slurm loads it only into a ${GPUBIND_SPANK_SLURM} release and refuses it elsewhere
(\"Incompatible Slurm plugin\"). For another release, build it against that
release's headers; gpubind doctor's slurm_spank check compares the two.")
endif()

set(CPACK_DEBIAN_CORE_PACKAGE_NAME gpubind)
set(CPACK_DEBIAN_CORE_DESCRIPTION "bind GPU workers to the CPUs, memory and NIC nearest their GPU
gpubind discovers a node's topology (hwloc), plans which CPU cores, NUMA
memory and NIC each worker of a multi-GPU job should use, applies the binding
under any launcher (its own launch, mpirun, srun, torchrun), checks and
watches running jobs, and measures the effect.

This package has the gpubind command, its hwloc discovery module, the Slurm
SPANK plugin, man pages and shell completion. watch --listen needs
gpubind-exporter; k8s check needs gpubind-k8s.${spank_description}")
set(CPACK_DEBIAN_CORE_PACKAGE_RECOMMENDS "gpubind-exporter")
set(CPACK_DEBIAN_CORE_PACKAGE_SUGGESTS "gpubind-k8s, slurmd, openmpi-bin")

set(CPACK_DEBIAN_EXPORTER_PACKAGE_NAME gpubind-exporter)
set(CPACK_DEBIAN_EXPORTER_PACKAGE_DEPENDS "gpubind (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_EXPORTER_DESCRIPTION "Prometheus exporter of gpubind watch: ranks' CPU and memory placement
The HTTP server behind gpubind watch --listen, which serves each GPU rank's
CPU affinity, migrations, cross-NUMA time and findings as Prometheus metrics,
and the gpubind-watch systemd unit that runs it on every GPU process of the
node (systemctl enable --now gpubind-watch).")

set(CPACK_DEBIAN_K8S_PACKAGE_NAME gpubind-k8s)
set(CPACK_DEBIAN_K8S_PACKAGE_DEPENDS "gpubind (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_K8S_DESCRIPTION "Kubernetes node check for gpubind: GPU pods' CPU and NUMA alignment
The modules behind gpubind k8s check: the kubelet's config.yaml read by
libyaml and the kubelet's pod-resources API asked through gRPC, to judge
whether each GPU container's CPUs and memory sit on its GPUs' NUMA node.")
include(CPack)
