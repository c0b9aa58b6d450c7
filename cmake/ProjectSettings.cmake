# Two INTERFACE targets every gpubind target links PRIVATE: warnings and build options
# (sanitizers). Keeping them here means every layer is compiled the same way.
add_library(gpubind_warnings INTERFACE)
target_compile_options(gpubind_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wnull-dereference -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough
  # A wide struct is initialised by designators naming only what differs from its defaults
  # (docs/CONVENTIONS.md): GCC 12's -Wextra warns at every member left to its default there.
  -Wno-missing-field-initializers)
if(WARNINGS_AS_ERRORS)
  target_compile_options(gpubind_warnings INTERFACE -Werror)
endif()

add_library(gpubind_options INTERFACE)
# Each function in a section of its own, so that the link can lay out exec's together
# (src/CMakeLists.txt, src/cli/exec_hot_symbols.txt).
target_compile_options(gpubind_options INTERFACE -ffunction-sections)
if(ENABLE_ASAN)
  target_compile_options(gpubind_options INTERFACE -fsanitize=address -fno-omit-frame-pointer)
  target_link_options(gpubind_options INTERFACE -fsanitize=address)
endif()
if(GPUBIND_FUZZ)
  target_compile_options(gpubind_options INTERFACE -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)
  target_link_options(gpubind_options INTERFACE -fsanitize=address,undefined)
endif()
if(ENABLE_UBSAN)
  target_compile_options(gpubind_options INTERFACE -fsanitize=undefined -fno-sanitize-recover=undefined)
  target_link_options(gpubind_options INTERFACE -fsanitize=undefined)
endif()

# gpubind_layer(NAME SOURCES... DEPS ...) declares one layer as a static library.
function(gpubind_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;DEPS" ${ARGN})
  add_library(gpubind_${name} STATIC ${L_SOURCES})
  target_include_directories(gpubind_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(gpubind_${name} PUBLIC ${L_DEPS} PRIVATE gpubind_warnings gpubind_options)
  if(GPUBIND_UNITY_BUILD)
    set_target_properties(gpubind_${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()
