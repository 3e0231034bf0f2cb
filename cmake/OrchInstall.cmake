# 'make install' (scripts/install.sh) runs 'cmake --install': the programs, the
# systemd unit with ExecStart pointing at the installed orchd, the sysusers.d
# and tmpfiles.d snippets, and the operator docs. The configuration file is
# installed by scripts/install.sh, which never overwrites an existing one.
include(GNUInstallDirs)

foreach(t orchd orch-worker orchctl orch-synth)
	if(TARGET ${t})
		install(TARGETS ${t} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
	endif()
endforeach()

# systemd searches <prefix>/lib/systemd/system, <prefix>/lib/sysusers.d and
# <prefix>/lib/tmpfiles.d for both /usr and /usr/local.
set(ORCH_SYSTEMD_LIBDIR "${CMAKE_INSTALL_PREFIX}/lib" CACHE PATH "Where systemd/, sysusers.d/, tmpfiles.d/ go")
file(READ ${CMAKE_SOURCE_DIR}/systemd/orchd.service _unit)
string(REPLACE "/usr/local/bin/orchd" "${CMAKE_INSTALL_FULL_BINDIR}/orchd" _unit "${_unit}")
string(REPLACE "/usr/local/share/doc/orch" "${CMAKE_INSTALL_FULL_DOCDIR}" _unit "${_unit}")
file(WRITE ${CMAKE_BINARY_DIR}/systemd/orchd.service "${_unit}")
# The CUDA backend module, where orch-worker looks for it (../lib/orch beside bin/),
# keeping the rpath to the CUDA toolkit's libraries.
if(TARGET orch-cuda)
	set_target_properties(orch-cuda PROPERTIES INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
	install(TARGETS orch-cuda LIBRARY DESTINATION lib/orch)
endif()
install(FILES ${CMAKE_BINARY_DIR}/systemd/orchd.service DESTINATION ${ORCH_SYSTEMD_LIBDIR}/systemd/system)
install(FILES systemd/orchd.sysusers DESTINATION ${ORCH_SYSTEMD_LIBDIR}/sysusers.d RENAME orchd.conf)
install(FILES systemd/orchd.tmpfiles DESTINATION ${ORCH_SYSTEMD_LIBDIR}/tmpfiles.d RENAME orchd.conf)
install(FILES systemd/orchd.conf DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES docs/operations.md docs/configuration.md docs/http-api.md docs/openapi.json
	DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES docs/man/orchctl.1 docs/man/orch-worker.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES docs/man/orchd.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES supervisor/orchctl/orchctl.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
	RENAME orchctl)
