# SPDX-License-Identifier: MIT
# The profile-guided build (WEFT_PGO, docs/emu.md PERFORMANCE): the weft tool
# and libweft are first built instrumented in ${CMAKE_BINARY_DIR}/pgo/gen (a
# build of this same source tree, with -fprofile-generate), that build runs a
# training workload (cmake/pgo_train.cmake), and the targets below are then
# compiled with the profile it wrote (-fprofile-use). The instrumented build
# and this one name their objects alike relative to their build directories,
# and -fprofile-prefix-path makes the profile's file names relative to them.
# Anything that changes the instrumented weft runs the training again, and a
# new profile recompiles the targets below (a Release build is then a full
# build: use -DWEFT_PGO=OFF while editing).

include(ExternalProject)

set(_pgo_dir ${CMAKE_BINARY_DIR}/pgo)
set(_pgo_gen ${_pgo_dir}/gen)
set(_pgo_prof ${_pgo_dir}/profile)
set(_pgo_stamp ${_pgo_dir}/profile.stamp)

# Under make, the instrumented build takes part in the caller's job server.
if(CMAKE_GENERATOR MATCHES "Make")
  set(_pgo_build $(MAKE) weft bench_emu)
else()
  set(_pgo_build ${CMAKE_COMMAND} --build ${_pgo_gen} --target weft bench_emu)
endif()

ExternalProject_Add(weft_pgo_gen
  SOURCE_DIR ${CMAKE_SOURCE_DIR}
  BINARY_DIR ${_pgo_gen}
  PREFIX ${_pgo_dir}/ep
  CMAKE_ARGS
    -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
    -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}
    -DCMAKE_C_FLAGS=${CMAKE_C_FLAGS}
    -DBUILD_TESTING=OFF
    -DWEFT_PGO=OFF
    -DWEFT_PGO_GENERATE=${_pgo_prof}
  BUILD_COMMAND ${_pgo_build}
  INSTALL_COMMAND ""
  BUILD_ALWAYS ON
  BUILD_BYPRODUCTS ${_pgo_gen}/bin/weft ${_pgo_gen}/bin/bench_emu)

add_custom_command(OUTPUT ${_pgo_stamp}
  COMMAND ${CMAKE_COMMAND} -DGEN=${_pgo_gen} -DPROFILE=${_pgo_prof} -DWORK=${_pgo_dir}/work
          -P ${CMAKE_SOURCE_DIR}/cmake/pgo_train.cmake
  COMMAND ${CMAKE_COMMAND} -E touch ${_pgo_stamp}
  DEPENDS ${_pgo_gen}/bin/weft ${_pgo_gen}/bin/bench_emu ${CMAKE_SOURCE_DIR}/cmake/pgo_train.cmake
  COMMENT "profile-guided build: the training run of the instrumented weft"
  VERBATIM)
add_custom_target(weft_pgo_profile DEPENDS ${_pgo_stamp})
add_dependencies(weft_pgo_profile weft_pgo_gen)

# The targets the training runs: the reader, the models, the engine, the
# outputs, the driver and the command line (libovni, the tests and the
# examples are built as usual).
foreach(_t weft_trace_obj weft_model weft_emu weft_out weft_driver weft)
  if(NOT TARGET ${_t})
    continue()
  endif()
  # An object without its profile is an error (-Wmissing-profile, on by
  # default, with -Werror): the build shows the profile is used throughout.
  # -Wno-maybe-uninitialized: the profile changes the inlining, and with it
  # this flow-sensitive warning's false positives (the other builds keep it).
  target_compile_options(${_t} PRIVATE -fprofile-use=${_pgo_prof}
    -fprofile-prefix-path=${CMAKE_BINARY_DIR} -fprofile-partial-training
    -Wno-maybe-uninitialized)
  add_dependencies(${_t} weft_pgo_profile)
  # a new profile recompiles each source (named by its full path: a source
  # property of a relative name would not reach the target's directory)
  get_target_property(_srcs ${_t} SOURCES)
  get_target_property(_sdir ${_t} SOURCE_DIR)
  foreach(_s IN LISTS _srcs)
    if(NOT IS_ABSOLUTE ${_s})
      set(_s ${_sdir}/${_s})
    endif()
    set_property(SOURCE ${_s} DIRECTORY ${_sdir} APPEND PROPERTY OBJECT_DEPENDS ${_pgo_stamp})
  endforeach()
endforeach()
