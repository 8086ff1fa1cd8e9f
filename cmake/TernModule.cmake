# tern_add_module(NAME SOURCES ... DEPS ...): one static library per architectural module, named tern_NAME.
# DEPS lists only the modules (and libraries) this one may use; that keeps the dependency direction visible.
function(tern_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(tern_${name} STATIC ${ARG_SOURCES})
  target_include_directories(tern_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(tern_${name} PUBLIC ${ARG_DEPS})
endfunction()

# tern_add_test(NAME SOURCES ... DEPS ... LABELS ... [TIMEOUT S] [RUN_SERIAL]): a GoogleTest binary whose cases
# become CTest tests; RUN_SERIAL ones run while no other test does (timing comparisons).
# Tests find shared data at TERN_SHARED_DIR and the CLI at TERN_BINARY.
function(tern_add_test name)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest_main GTest::gmock)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${name} PRIVATE
    TERN_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared"
    TERN_BINARY="$<TARGET_FILE:tern>"
    TERN_TEST_TMP="${CMAKE_BINARY_DIR}/test_tmp")
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  # Sanitized code runs several times slower (ThreadSanitizer up to 10x): the per-test limits stretch with it.
  if(TERN_TSAN)
    math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * 10")
  elseif(TERN_SANITIZE)
    math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * 4")
  endif()
  set(serial FALSE)
  if(ARG_RUN_SERIAL)
    set(serial TRUE)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT} RUN_SERIAL ${serial}
    DISCOVERY_TIMEOUT 60)
endfunction()
