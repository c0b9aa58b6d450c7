# Run at install time (cmake/Install.cmake, component dbg): every ELF file installed so far (the
# binaries, gpubind and gpubind-full, its modules, the SPANK plugin) is split into a stripped file and its debug file, Debian's
# way: objcopy --only-keep-debug to <DESTDIR><prefix>/lib/debug/<path>.debug, then, only once that
# is written, --strip-debug --strip-unneeded with --add-gnu-debuglink so gdb finds it. A file
# objcopy refuses is left as it was, with a message. GPUBIND_DEBUG_FILES=no in the environment
# (make install DEBUG_FILES=no) strips without keeping the debug information.
foreach(installed IN LISTS CMAKE_INSTALL_MANIFEST_FILES)
  if(NOT installed MATCHES "(/bin/gpubind|/gpubind-full|\\.so)$" OR installed MATCHES "/lib/debug/")
    continue()
  endif()
  set(file "${installed}")
  if(NOT EXISTS "${file}" AND DEFINED ENV{DESTDIR})
    set(file "$ENV{DESTDIR}${installed}")
  endif()
  file(READ "${file}" magic LIMIT 4 HEX)
  if(NOT magic STREQUAL "7f454c46")
    continue()
  endif()
  # <root>/<prefix>/lib/debug/<prefix>/<rest>: the debug tree mirrors the file's installed path.
  string(REGEX REPLACE "^(.*)${CMAKE_INSTALL_PREFIX}/.*$" "\\1" root "${file}")
  string(REPLACE "${root}" "" path "${file}")
  set(debug "${root}${CMAKE_INSTALL_PREFIX}/lib/debug${path}.debug")
  if("$ENV{GPUBIND_DEBUG_FILES}" STREQUAL "no")
    execute_process(COMMAND "${GPUBIND_OBJCOPY}" --strip-debug --strip-unneeded "${file}" RESULT_VARIABLE rc1 ERROR_VARIABLE err)
    if(rc1)
      message(STATUS "Not stripped: ${file} (objcopy: ${err})")
    else()
      message(STATUS "Stripped: ${file} (no debug file: GPUBIND_DEBUG_FILES=no)")
    endif()
    continue()
  endif()
  get_filename_component(debug_dir "${debug}" DIRECTORY)
  file(MAKE_DIRECTORY "${debug_dir}")
  execute_process(COMMAND "${GPUBIND_OBJCOPY}" --only-keep-debug "${file}" "${debug}" RESULT_VARIABLE rc1 ERROR_VARIABLE err)
  if(NOT rc1)  # never stripped without its debug file
    execute_process(COMMAND "${GPUBIND_OBJCOPY}" --strip-debug --strip-unneeded "--add-gnu-debuglink=${debug}" "${file}"
                    RESULT_VARIABLE rc1 ERROR_VARIABLE err)
  endif()
  if(rc1)
    message(STATUS "Not stripped: ${file} (objcopy: ${err})")
  else()
    file(CHMOD "${debug}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
    message(STATUS "Stripped: ${file} (debug information in ${debug})")
  endif()
endforeach()
