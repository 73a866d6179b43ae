# Runs CMD (a ;-list) and checks its exit code is EXPECT_RC and, when given, that its combined
# output contains EXPECT_TEXT. Used for the `shardscope plan` command-line tests.
#   cmake -DCMD="a;b" -DEXPECT_RC=2 -DEXPECT_TEXT="unknown key" -P expect_exit.cmake
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED EXPECT_TEXT)
  string(FIND "${out}${err}" "${EXPECT_TEXT}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "output lacks '${EXPECT_TEXT}'\nstdout:\n${out}\nstderr:\n${err}")
  endif()
endif()
