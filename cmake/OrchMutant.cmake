# orch_mutant(NAME SOURCE file FROM text TO text T_ONLY filter EXPECT regex
#             SOURCES test sources... LIBS libs... [RUN script])
#
# A mutant: a copy of the real @SOURCE (a .cu kernel or a .c file of the CUDA
# backend) with the one occurrence of @FROM replaced by @TO (configure fails if
# @FROM is not there exactly once, so a mutant cannot go stale unnoticed),
# compiled into its own copy of a test binary (@SOURCES and @LIBS, as the real
# test's orch_test call), ahead of the libraries: the mutated object defines
# every symbol of the original, so the archive's member is never linked. The
# test "mutant_NAME" (label gpu) runs that binary with T_ONLY=@T_ONLY and
# passes only if it fails and its output matches @EXPECT: the diagnosis the
# simulated device is meant to give, not just any failure. With RUN, the test
# runs that script (a path in the source tree) with the binary as its argument.
function(orch_mutant name)
	# by hand, argument by argument: FROM and TO are C, with semicolons that a list
	# (cmake_parse_arguments' ARGN) would split
	set(key "")
	set(M_SOURCES "")
	set(M_LIBS "")
	set(M_RUN "")
	math(EXPR last "${ARGC} - 1")
	foreach(i RANGE 1 ${last})
		set(a "${ARGV${i}}")
		if(a MATCHES "^(SOURCE|FROM|TO|T_ONLY|EXPECT|SOURCES|LIBS|RUN)$")
			set(key ${a})
		elseif(key MATCHES "^(SOURCES|LIBS)$")
			list(APPEND M_${key} ${a})
		elseif(key)
			set(M_${key} "${a}")
		else()
			message(FATAL_ERROR "mutant ${name}: '${a}' before a keyword")
		endif()
	endforeach()
	set(src ${CMAKE_SOURCE_DIR}/${M_SOURCE})
	file(READ ${src} text)
	string(FIND "${text}" "${M_FROM}" first)
	string(FIND "${text}" "${M_FROM}" last REVERSE)
	if(first EQUAL -1 OR NOT first EQUAL last)
		message(FATAL_ERROR "mutant ${name}: '${M_FROM}' is not in ${M_SOURCE} exactly once")
	endif()
	string(REPLACE "${M_FROM}" "${M_TO}" text "${text}")
	set(mut ${CMAKE_BINARY_DIR}/mutants/${name}/${M_SOURCE})
	set(old "")
	if(EXISTS ${mut})
		file(READ ${mut} old)
	endif()
	if(NOT old STREQUAL text) # rewritten only when it changes: no rebuild otherwise
		file(WRITE ${mut} "${text}")
	endif()
	set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
	get_filename_component(dir ${src} DIRECTORY)
	if(mut MATCHES "\\.cu$")
		set(gen ${mut}.cc)
		add_custom_command(OUTPUT ${gen}
			COMMAND cusim-rewrite ${mut} ${gen}
			DEPENDS cusim-rewrite ${mut}
			COMMENT "cusim-rewrite the mutant ${name}")
		set_source_files_properties(${gen} PROPERTIES
			COMPILE_OPTIONS "-iquote;${dir};${ORCH_CUSIM_KERNEL_FLAGS}")
	else()
		set(gen ${mut})
		set_source_files_properties(${gen} PROPERTIES COMPILE_OPTIONS "-iquote;${dir}")
	endif()
	orch_cu_sources(srcs ${M_SOURCES})
	add_executable(mutant_${name} ${gen} ${srcs})
	target_include_directories(mutant_${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
	target_link_libraries(mutant_${name} PRIVATE ${M_LIBS})
	set_property(GLOBAL APPEND PROPERTY ORCH_GPU_TEST_TARGETS mutant_${name})
	set(run "")
	set(timeout 300)
	if(M_RUN)
		set(run ${CMAKE_SOURCE_DIR}/${M_RUN})
		set(timeout 900)
	endif()
	add_test(NAME mutant_${name} COMMAND ${CMAKE_SOURCE_DIR}/tests/sim/mutant_run.sh
		"${M_EXPECT}" ${run} $<TARGET_FILE:mutant_${name}>)
	set_tests_properties(mutant_${name} PROPERTIES LABELS "gpu;mutant" TIMEOUT ${timeout}
		ENVIRONMENT "T_ONLY=${M_T_ONLY};ORCH_TESTDATA=${ORCH_TESTDATA};ORCH_BIN=${CMAKE_BINARY_DIR}/bin;ORCH_SRC=${CMAKE_SOURCE_DIR}")
endfunction()
