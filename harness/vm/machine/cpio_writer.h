// An in-memory writer for the cpio "newc" format (the only format the kernel's initramfs unpacker
// reads). Written by hand because the format is tiny (a 110-byte ASCII header per entry) and
// building the archive in memory makes it deterministic (fixed mtimes, inode numbers and owners),
// so the initramfs can be cached by content hash; the cpio tool would need a staging tree on disk.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace powercut::vm {

class CpioWriter {
 public:
  void AddDirectory(std::string_view path, uint32_t mode = 0755);
  void AddFile(std::string_view path, std::string_view data, uint32_t mode = 0644);
  void AddSymlink(std::string_view path, std::string_view target);
  void AddCharDevice(std::string_view path, uint32_t major, uint32_t minor, uint32_t mode = 0600);
  // Appends the TRAILER!!! entry and returns the archive; the writer is empty afterwards.
  std::string Finish();

 private:
  void AddEntry(std::string_view path, uint32_t mode, std::string_view data, uint32_t rdev_major,
                uint32_t rdev_minor);
  std::string out_;
  uint32_t next_inode_ = 1;
};

}  // namespace powercut::vm
