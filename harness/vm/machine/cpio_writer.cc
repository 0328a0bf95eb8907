#include "harness/vm/machine/cpio_writer.h"

#include <sys/stat.h>

#include "fmt/format.h"

namespace powercut::vm {
namespace {

void PadTo4(std::string& out) {
  while (out.size() % 4 != 0) out.push_back('\0');
}

}  // namespace

void CpioWriter::AddEntry(std::string_view path, uint32_t mode, std::string_view data,
                          uint32_t rdev_major, uint32_t rdev_minor) {
  // Paths in an initramfs are relative to its root, without a leading slash.
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  uint32_t ino = path == "TRAILER!!!" ? 0 : next_inode_++;
  out_ += fmt::format(
      "070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}", ino,
      mode, /*uid=*/0, /*gid=*/0, /*nlink=*/S_ISDIR(mode) ? 2 : 1, /*mtime=*/0,
      static_cast<uint32_t>(data.size()), /*devmajor=*/0, /*devminor=*/0, rdev_major, rdev_minor,
      static_cast<uint32_t>(path.size() + 1), /*check=*/0);
  out_.append(path);
  out_.push_back('\0');
  PadTo4(out_);
  out_.append(data);
  PadTo4(out_);
}

void CpioWriter::AddDirectory(std::string_view path, uint32_t mode) {
  AddEntry(path, S_IFDIR | mode, {}, 0, 0);
}

void CpioWriter::AddFile(std::string_view path, std::string_view data, uint32_t mode) {
  AddEntry(path, S_IFREG | mode, data, 0, 0);
}

void CpioWriter::AddSymlink(std::string_view path, std::string_view target) {
  AddEntry(path, S_IFLNK | 0777, target, 0, 0);
}

void CpioWriter::AddCharDevice(std::string_view path, uint32_t major, uint32_t minor,
                               uint32_t mode) {
  AddEntry(path, S_IFCHR | mode, {}, major, minor);
}

std::string CpioWriter::Finish() {
  AddEntry("TRAILER!!!", 0, {}, 0, 0);
  std::string result = std::move(out_);
  out_.clear();
  next_inode_ = 1;
  return result;
}

}  // namespace powercut::vm
