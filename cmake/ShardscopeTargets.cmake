include(GoogleTest)

# Helpers that keep each layer's CMakeLists to a line per library.

# shardscope_library(NAME DIR [DEPS ...]): a static library of every .cpp under DIR
# (recursively, tests and benchmarks excluded), or an INTERFACE library when there is none.
function(shardscope_library name dir)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*.cpp")
  list(FILTER srcs EXCLUDE REGEX "_(test|benchmark|fuzz)\\.cpp$")
  if(srcs)
    add_library(${name} STATIC ${srcs})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_compile_options(${name} PRIVATE ${SHARDSCOPE_WARNINGS})
    target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

# shardscope_test(NAME SOURCES ... LIBS ... [LABELS ...]): a GoogleTest program under CTest.
# Tests run from the source tree's tests/ folder so fixtures resolve the same everywhere.
function(shardscope_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${SHARDSCOPE_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    SHARDSCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    SHARDSCOPE_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
  # One label per test program: `unit` unless the caller names another (gpu, torch, slow).
  set(labels unit)
  if(ARG_LABELS)
    set(labels ${ARG_LABELS})
  endif()
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    PROPERTIES LABELS "${labels}"
    DISCOVERY_TIMEOUT 60)
endfunction()
