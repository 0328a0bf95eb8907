#include "harness/vm/machine/pvh_kernel.h"

#include <elf.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <filesystem>

#include "base/hash.h"
#include "base/image_io.h"
#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;

// XEN_ELFNOTE_PHYS32_ENTRY (xen/include/public/elfnote.h): the 32-bit entry qemu's PVH loader
// jumps to.
constexpr uint32_t kPvhEntryNote = 18;
constexpr size_t kChunk = 1 << 20;

template <typename T>
T Load(const std::string& bytes, size_t at) {
  T v{};
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

absl::StatusOr<std::string> UnpackXz(const uint8_t* in, size_t size) {
  lzma_stream s = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&s, UINT64_MAX, 0) != LZMA_OK) {
    return absl::InternalError("liblzma: cannot start a decoder");
  }
  std::string out;
  s.next_in = in;
  s.avail_in = size;
  lzma_ret r = LZMA_OK;
  while (r == LZMA_OK) {
    const size_t have = out.size();
    out.resize(have + kChunk);
    s.next_out = reinterpret_cast<uint8_t*>(out.data() + have);
    s.avail_out = kChunk;
    r = lzma_code(&s, s.avail_in == 0 ? LZMA_FINISH : LZMA_RUN);
    out.resize(out.size() - s.avail_out);
  }
  lzma_end(&s);
  if (r != LZMA_STREAM_END) return absl::DataLossError(fmt::format("xz error {}", int{r}));
  return out;
}

absl::StatusOr<std::string> UnpackGzip(const uint8_t* in, size_t size) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
    return absl::InternalError("zlib: cannot start a decoder");
  }
  std::string out;
  z.next_in = const_cast<Bytef*>(in);
  z.avail_in = static_cast<uInt>(size);
  int r = Z_OK;
  while (r == Z_OK) {
    const size_t have = out.size();
    out.resize(have + kChunk);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + have);
    z.avail_out = kChunk;
    r = inflate(&z, Z_NO_FLUSH);
    out.resize(out.size() - z.avail_out);
  }
  inflateEnd(&z);
  if (r != Z_STREAM_END) return absl::DataLossError(fmt::format("gzip error {}", r));
  return out;
}

absl::StatusOr<std::string> UnpackZstd(const uint8_t* in, size_t size) {
  ZSTD_DCtx* d = ZSTD_createDCtx();
  if (d == nullptr) return absl::InternalError("libzstd: cannot start a decoder");
  std::string out;
  ZSTD_inBuffer input{in, size, 0};
  size_t left = 1;
  while (left != 0) {
    const size_t have = out.size();
    out.resize(have + kChunk);
    ZSTD_outBuffer output{out.data() + have, kChunk, 0};
    left = ZSTD_decompressStream(d, &output, &input);
    out.resize(have + output.pos);
    if (ZSTD_isError(left)) break;
    if (left != 0 && input.pos == input.size && output.pos == 0) break;  // truncated
  }
  ZSTD_freeDCtx(d);
  if (left != 0) {
    return absl::DataLossError(ZSTD_isError(left) ? ZSTD_getErrorName(left)
                                                  : "zstd stream ends early");
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> UnpackBzImagePayload(const std::string& bzimage) {
  // The x86 boot protocol's setup header (Documentation/arch/x86/boot.rst): "HdrS" at 0x202,
  // the version at 0x206, setup_sects at 0x1f1, payload_offset/length at 0x248/0x24c (2.08+),
  // the payload offset counted from the protected-mode code after the setup sectors.
  if (bzimage.size() < 0x250 || bzimage.compare(0x202, 4, "HdrS") != 0) {
    return absl::InvalidArgumentError("not an x86 bzImage (no HdrS setup header)");
  }
  const auto version = Load<uint16_t>(bzimage, 0x206);
  if (version < 0x208) {
    return absl::InvalidArgumentError(
        fmt::format("boot protocol {:x}.{:02x} has no payload fields (2.08+ needed)", version >> 8,
                    version & 0xff));
  }
  uint32_t setup_sects = static_cast<uint8_t>(bzimage[0x1f1]);
  if (setup_sects == 0) setup_sects = 4;
  const uint64_t start = (uint64_t{setup_sects} + 1) * 512 + Load<uint32_t>(bzimage, 0x248);
  const uint64_t length = Load<uint32_t>(bzimage, 0x24c);
  if (start + length > bzimage.size() || length < 6) {
    return absl::InvalidArgumentError("the bzImage's payload lies outside the file");
  }
  const auto* p = reinterpret_cast<const uint8_t*>(bzimage.data() + start);
  static constexpr uint8_t kXz[] = {0xfd, '7', 'z', 'X', 'Z', 0};
  static constexpr uint8_t kGzip[] = {0x1f, 0x8b};
  static constexpr uint8_t kZstd[] = {0x28, 0xb5, 0x2f, 0xfd};
  if (std::memcmp(p, kXz, sizeof kXz) == 0) return UnpackXz(p, length);
  if (std::memcmp(p, kGzip, sizeof kGzip) == 0) return UnpackGzip(p, length);
  if (std::memcmp(p, kZstd, sizeof kZstd) == 0) return UnpackZstd(p, length);
  return absl::UnimplementedError(
      "the payload is compressed with neither xz, gzip nor zstd (lz4, lzo, bzip2 or lzma)");
}

bool HasPvhEntry(const std::string& elf) {
  if (elf.size() < sizeof(Elf64_Ehdr) || elf.compare(0, SELFMAG, ELFMAG) != 0 ||
      elf[EI_CLASS] != ELFCLASS64) {
    return false;
  }
  const auto eh = Load<Elf64_Ehdr>(elf, 0);
  if (eh.e_machine != EM_X86_64 || eh.e_phentsize != sizeof(Elf64_Phdr)) return false;
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    const uint64_t at = eh.e_phoff + uint64_t{i} * sizeof(Elf64_Phdr);
    if (at + sizeof(Elf64_Phdr) > elf.size()) return false;
    const auto ph = Load<Elf64_Phdr>(elf, at);
    if (ph.p_type != PT_NOTE || ph.p_offset + ph.p_filesz > elf.size()) continue;
    uint64_t n = ph.p_offset;
    const uint64_t end = ph.p_offset + ph.p_filesz;
    while (n + sizeof(Elf64_Nhdr) <= end) {
      const auto nh = Load<Elf64_Nhdr>(elf, n);
      const uint64_t name = n + sizeof(Elf64_Nhdr);
      const uint64_t desc = name + ((uint64_t{nh.n_namesz} + 3) & ~uint64_t{3});
      if (nh.n_namesz == 4 && name + 4 <= end &&
          elf.compare(name, 4, std::string("Xen\0", 4)) == 0 && nh.n_type == kPvhEntryNote) {
        return true;
      }
      n = desc + ((uint64_t{nh.n_descsz} + 3) & ~uint64_t{3});
    }
  }
  return false;
}

absl::StatusOr<std::string> PvhKernelFor(const GuestKernel& kernel) {
  ASSIGN_OR_RETURN(std::string bzimage, ReadWholeFile(kernel.vmlinuz));
  ASSIGN_OR_RETURN(std::string cache, CacheRoot());
  const fs::path dir = fs::path(cache) / "pvh";
  const std::string hash =
      HashBytes(
          absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bzimage.data()), bzimage.size()))
          .Hex();
  const fs::path path = dir / (hash + ".elf");
  std::error_code ec;
  if (fs::exists(path, ec)) return path.string();
  auto elf = UnpackBzImagePayload(bzimage);
  if (!elf.ok()) {
    return absl::Status(elf.status().code(),
                        fmt::format("{}: {}", kernel.vmlinuz, std::string(elf.status().message())));
  }
  if (!HasPvhEntry(*elf)) {
    return absl::FailedPreconditionError(
        fmt::format("{}: the kernel has no PVH entry point (CONFIG_PVH)", kernel.vmlinuz));
  }
  fs::create_directories(dir, ec);
  RETURN_IF_ERROR(PublishFile(path.string(), *elf));
  return path.string();
}

}  // namespace powercut::vm
