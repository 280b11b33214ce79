# SPDX-License-Identifier: MIT
# The man pages (WEFT_MAN, on by default): weft(1), weft-CMD(1) for every
# command that `weft --help` lists, and ovnidump(1), ovnitop(1), ovniemu(1),
# ovnisort(1) for the reference's names (WEFT_OVNI_COMMANDS), written at
# build time by docs/man/mangen.c from the built tool's --help texts (the one
# source: a new command or option shows in its page at the next build), into
# ${CMAKE_BINARY_DIR}/man/man1, and installed into share/man/man1.
# ovniver has no help text (it prints the versions): no page.
option(WEFT_MAN "Generate and install the man pages (from the --help texts)" ON)
if(NOT WEFT_MAN)
  return()
endif()
if(CMAKE_CROSSCOMPILING)
  message(STATUS "man pages: not generated (cross-compiling: the built weft cannot run here)")
  return()
endif()

add_executable(weft_mangen ${CMAKE_SOURCE_DIR}/docs/man/mangen.c)
set_target_properties(weft_mangen PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/man)

set(_man_dir ${CMAKE_BINARY_DIR}/man/man1)
set(_man_stamp ${CMAKE_BINARY_DIR}/man/man1.stamp)
set(_man_ovni)
if(WEFT_OVNI_COMMANDS)
  set(_man_ovni ovnidump=dump ovnitop=top ovniemu=emu ovnisort=sort)
endif()
add_custom_command(OUTPUT ${_man_stamp}
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${_man_dir}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${_man_dir}
  COMMAND weft_mangen $<TARGET_FILE:weft> ${CMAKE_BINARY_DIR}/bin ${_man_dir} ${PROJECT_VERSION}
          "${PROJECT_DESCRIPTION}" ${_man_ovni}
  COMMAND ${CMAKE_COMMAND} -E touch ${_man_stamp}
  DEPENDS weft weft_mangen
  COMMENT "man pages from the --help texts (docs/man/mangen.c)"
  VERBATIM)
add_custom_target(weft_man ALL DEPENDS ${_man_stamp})
install(DIRECTORY ${_man_dir}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 FILES_MATCHING PATTERN "*.1")
