# orch_test(NAME SOURCES src... [LIBS lib...] [LABELS l...] [TIMEOUT s] [ARGS a...])
# One test binary per module (STYLE.md rule 15). Exit code 77 means "skipped".
function(orch_test name)
	cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
	if(NOT T_TIMEOUT)
		set(T_TIMEOUT 60)
	endif()
	if(NOT T_LABELS)
		set(T_LABELS unit)
	endif()
	orch_cu_sources(T_SOURCES ${T_SOURCES})
	add_executable(${name} ${T_SOURCES})
	target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
	target_link_libraries(${name} PRIVATE ${T_LIBS})
	add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
	if("gpu" IN_LIST T_LABELS) # what 'cmake --build . --target gpu-tests' builds
		set_property(GLOBAL APPEND PROPERTY ORCH_GPU_TEST_TARGETS ${name})
	endif()
	set_tests_properties(${name} PROPERTIES
		LABELS "${T_LABELS}"
		TIMEOUT ${T_TIMEOUT}
		SKIP_RETURN_CODE 77
		ENVIRONMENT "ORCH_TESTDATA=${ORCH_TESTDATA};ORCH_BIN=${CMAKE_BINARY_DIR}/bin;ORCH_SRC=${CMAKE_SOURCE_DIR};ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1:abort_on_error=1")
endfunction()
