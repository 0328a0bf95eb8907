# powercut_closed_library(lib): proves in every build that `lib` needs nothing above it.
#
# A static library links even when one of its objects calls a function of a room above it (the
# symbol stays undefined until a program links both). So each harness room also links, whole,
# into a small program that has only the room's own declared dependencies: an include that
# reaches up (state calling into check, say) leaves an undefined symbol there and fails the
# build, not some later program's link.
function(powercut_closed_library lib)
  set(main "${CMAKE_CURRENT_BINARY_DIR}/${lib}_closed_main.cc")
  file(GENERATE OUTPUT "${main}" CONTENT "int main() { return 0; }\n")
  add_executable(${lib}_closed "${main}")
  target_link_libraries(${lib}_closed PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${lib}>")
endfunction()
