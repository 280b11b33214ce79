# SPDX-License-Identifier: MIT
# Install-time part of python/CMakeLists.txt: puts the package weft (the
# extension and __init__.py) where the interpreter it was built for looks,
# for the prefix given at install time (cmake --install --prefix P).
#
# Set before this script runs (install(CODE) in python/CMakeLists.txt):
#   WEFT_PY_EXE       the interpreter
#   WEFT_PY_MODULE    the extension (weft/_weft*.so)
#   WEFT_PY_INIT      weft/__init__.py
#   WEFT_PY_DIR       WEFT_PYTHON_INSTALL_DIR: relative to the prefix, or
#                     empty to ask the interpreter
#   WEFT_PY_FALLBACK  the sysconfig posix_prefix directory (relative), used
#                     when the interpreter looks nowhere under the prefix
#
# Asking the interpreter: the first of its site directories (site's
# getsitepackages(), which on Debian's python3 are /usr/local/lib/python3.X/
# dist-packages, /usr/lib/python3/dist-packages, ...; then the user's site
# directory) that lies under the prefix. sysconfig's posix_prefix scheme
# (lib/python3.X/site-packages) is not one of Debian's: a package there is
# not found by /usr/bin/python3.
set(_prefix "${CMAKE_INSTALL_PREFIX}")
set(_on_path 1)
if(WEFT_PY_DIR)
  set(_rel "${WEFT_PY_DIR}")
  set(_why "WEFT_PYTHON_INSTALL_DIR")
else()
  set(_probe [=[
import os, site, sys
prefix = os.path.realpath(sys.argv[1])
dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
if site.ENABLE_USER_SITE:
    dirs.append(site.getusersitepackages())
for d in dirs:
    r = os.path.relpath(os.path.realpath(d), prefix)
    if r != "." and not r.startswith(".."):
        print(r)
        break
]=])
  execute_process(COMMAND "${WEFT_PY_EXE}" -c "${_probe}" "${_prefix}"
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _rel ERROR_VARIABLE _err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "weft Python module: cannot ask ${WEFT_PY_EXE} where it looks: ${_err}")
  endif()
  set(_why "a site directory of ${WEFT_PY_EXE}")
  if(_rel STREQUAL "")
    set(_rel "${WEFT_PY_FALLBACK}")
    set(_on_path 0)
  endif()
endif()
set(_dest "${_prefix}/${_rel}/weft")
file(INSTALL DESTINATION "${_dest}" TYPE MODULE FILES "${WEFT_PY_MODULE}")
file(INSTALL DESTINATION "${_dest}" TYPE FILE FILES "${WEFT_PY_INIT}")
if(_on_path)
  message(STATUS "weft Python module: ${_dest} (${_why})")
else()
  message(STATUS "weft Python module: ${_dest}: ${WEFT_PY_EXE} does not look under ${_prefix}; "
                 "use PYTHONPATH=${_prefix}/${_rel} (or -DWEFT_PYTHON_INSTALL_DIR=DIR)")
endif()
