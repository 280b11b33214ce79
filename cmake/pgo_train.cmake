# SPDX-License-Identifier: MIT
# The training workload of the profile-guided build (cmake/pgo.cmake), run
# with cmake -P: GEN, the instrumented build; PROFILE, where its profile goes;
# WORK, a scratch directory (removed at the end, about 250 MB at most).
#
# The profile is made anew each time (gcov would otherwise add the counts of
# earlier runs, of older code). The workload: the two synthetic traces of
# bench_emu at a fifth of the benchmark's size and another layout (6 threads
# on 3 CPUs rather than 8 on 4): an ovni-only one (thread states, CPU
# hand-overs, marks, flushes) and a runtime-shaped one (nosv tasks,
# subsystems, MPI calls); each emulated to Paraver, the runtime one also to
# every output with the summary, and read by weft dump and weft top.

foreach(_v GEN PROFILE WORK)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "pgo_train.cmake: -D${_v}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${PROFILE} ${WORK})
file(MAKE_DIRECTORY ${PROFILE})

function(train)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_QUIET)
  if(NOT _rc EQUAL 0)
    file(REMOVE_RECURSE ${WORK})
    string(REPLACE ";" " " _cmd "${ARGN}")
    message(FATAL_ERROR "profile-guided build: the training step failed (${_rc}): ${_cmd} "
                        "(configure with -DWEFT_PGO=OFF to build without a profile)")
  endif()
endfunction()

train(${GEN}/bin/bench_emu -g ${WORK} -n 2000000 -c 3)
train(${GEN}/bin/weft emu --paraver -q -o ${WORK}/out-ovni ${WORK}/trace)
file(REMOVE_RECURSE ${WORK}/out-ovni)
train(${GEN}/bin/weft emu --paraver -q -o ${WORK}/out-rt ${WORK}/rt-trace)
file(REMOVE_RECURSE ${WORK}/out-rt)
train(${GEN}/bin/weft emu -o ${WORK}/out-all ${WORK}/rt-trace)
file(REMOVE_RECURSE ${WORK}/out-all)
train(${GEN}/bin/weft dump ${WORK}/rt-trace)
train(${GEN}/bin/weft top ${WORK}/trace)
file(REMOVE_RECURSE ${WORK})

file(GLOB _gcda ${PROFILE}/*.gcda)
list(LENGTH _gcda _n)
if(_n EQUAL 0)
  message(FATAL_ERROR "profile-guided build: the training wrote no profile in ${PROFILE}")
endif()
message(STATUS "profile-guided build: ${_n} profile files in ${PROFILE}")
