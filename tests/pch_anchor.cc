// The source of powercut_test_pch (tests/CMakeLists.txt): a target exists only to build the
// precompiled header every test program reuses, and a target needs a source.
