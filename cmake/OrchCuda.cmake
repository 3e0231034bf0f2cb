# orch_cu_sources(OUT src...) - the sources to compile for @src: the same list,
# except that with the simulated device (ORCH_CUDA=SIM) each .cu file becomes
# the plain C++ file cusim-rewrite makes of it in the build tree (launches and
# __shared__ declarations rewritten, nothing else; cuda/sim/README.md), compiled
# by the host C++ compiler with the device language header forced in and, in the
# checking build, every memory access instrumented for the simulator's checks.
# Includes relative to the .cu file still resolve (-iquote its directory).
function(orch_cu_sources out)
	set(res)
	foreach(f ${ARGN})
		get_filename_component(abs ${f} ABSOLUTE)
		if(ORCH_CUDA_SIM AND abs MATCHES "\\.cu$")
			file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${abs})
			set(gen ${CMAKE_BINARY_DIR}/cusim-src/${rel}.cc)
			get_filename_component(dir ${abs} DIRECTORY)
			get_property(done GLOBAL PROPERTY ORCH_CUSIM_GEN_${CMAKE_CURRENT_SOURCE_DIR})
			if(NOT gen IN_LIST done)
				get_filename_component(gen_dir ${gen} DIRECTORY)
				add_custom_command(OUTPUT ${gen}
					COMMAND ${CMAKE_COMMAND} -E make_directory ${gen_dir}
					COMMAND cusim-rewrite ${abs} ${gen}
					DEPENDS cusim-rewrite ${abs}
					COMMENT "cusim-rewrite ${rel}")
				set_property(GLOBAL APPEND PROPERTY ORCH_CUSIM_GEN_${CMAKE_CURRENT_SOURCE_DIR}
					${gen})
			endif()
			set_source_files_properties(${gen} PROPERTIES
				COMPILE_OPTIONS "-iquote;${dir};${ORCH_CUSIM_KERNEL_FLAGS}")
			list(APPEND res ${gen})
		else()
			list(APPEND res ${abs})
		endif()
	endforeach()
	set(${out} ${res} PARENT_SCOPE)
endfunction()
