# The slow tier (CTest label `slow`) among tests GoogleTest discovers at build time: CTest includes this file
# after the discovered tests exist (TEST_INCLUDE_FILES in tests/CMakeLists.txt), so they are labelled by
# name. CTest ignores a name that no longer exists; the test slow_labels fails on one.
set(hetrain_slow_gtests
)
foreach(name IN LISTS hetrain_slow_gtests)
  set_tests_properties("${name}" PROPERTIES LABELS slow)
endforeach()
