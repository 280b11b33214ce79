# SPDX-License-Identifier: MIT
# Install-time step (top-level CMakeLists.txt, after libovni and libweft are
# installed): makes the dynamic loader find libovni.so.1 and libweft.so.0 in
# the prefix, so that a program built with `pkg-config --libs ovni` runs.
#
# Set before this script runs (install(CODE)): WEFT_LIBDIR, the library
# directory relative to the prefix (CMAKE_INSTALL_LIBDIR).
#
# As root and without DESTDIR (a staged install for a package: its own
# scripts run ldconfig on the target machine), it runs `ldconfig`, which
# rebuilds the loader's cache from the directories of /etc/ld.so.conf (on
# Debian /usr/local/lib is one of them). Then, whoever installs, it asks
# the cache (`ldconfig -p`) whether the loader finds the installed
# libovni.so.1 there, and says what to do when it does not.
set(_libdir "${CMAKE_INSTALL_PREFIX}/${WEFT_LIBDIR}")
if(NOT "$ENV{DESTDIR}" STREQUAL "")
  return()
endif()
find_program(_weft_ldconfig ldconfig PATHS /sbin /usr/sbin NO_CACHE)
if(NOT _weft_ldconfig)
  message(STATUS "ldconfig: not found; a program linked with -lovni needs LD_LIBRARY_PATH=${_libdir} "
                 "(or -Wl,-rpath,${_libdir})")
  return()
endif()
execute_process(COMMAND id -u OUTPUT_VARIABLE _uid OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(_uid STREQUAL "0")
  execute_process(COMMAND ${_weft_ldconfig} RESULT_VARIABLE _rc ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(WARNING "ldconfig failed (exit ${_rc}): ${_err}")
  endif()
endif()
execute_process(COMMAND ${_weft_ldconfig} -p OUTPUT_VARIABLE _cache RESULT_VARIABLE _rc ERROR_QUIET)
get_filename_component(_real "${_libdir}/libovni.so.1" REALPATH)
set(_found 0)
if(_rc EQUAL 0)
  string(REPLACE "\n" ";" _lines "${_cache}")
  foreach(_l IN LISTS _lines)
    if(_l MATCHES "^[ \t]*libovni\\.so\\.1 .*=> (.*)$")
      get_filename_component(_p "${CMAKE_MATCH_1}" REALPATH)
      if(_p STREQUAL _real)
        set(_found 1)
      endif()
    endif()
  endforeach()
endif()
if(_found)
  message(STATUS "ldconfig: the loader finds ${_libdir}/libovni.so.1")
elseif(_uid STREQUAL "0")
  message(STATUS "ldconfig: ${_libdir} is not in the loader's search path: add it to a file in "
                 "/etc/ld.so.conf.d/ and run ldconfig, or run programs linked with -lovni with "
                 "LD_LIBRARY_PATH=${_libdir} (or link them with -Wl,-rpath,${_libdir})")
else()
  message(STATUS "ldconfig: not root: the loader does not find ${_libdir}/libovni.so.1; run "
                 "ldconfig as root (when ${_libdir} is in /etc/ld.so.conf), or run programs linked "
                 "with -lovni with LD_LIBRARY_PATH=${_libdir} (or link them with -Wl,-rpath,${_libdir})")
endif()
