# -Wnull-dereference is left out: GCC 12 reports false positives inside CLI11 and libstdc++ headers.
add_library(powercut_warnings INTERFACE)
target_compile_options(powercut_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wimplicit-fallthrough -Wno-missing-field-initializers)
