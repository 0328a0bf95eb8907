// wal_format_example: prints the worked hex example of docs/format.md (a segment header and two
// records, each line annotated), generated with the format's own encoders so the document cannot
// drift from the code. With a directory argument it also writes that segment there, as
// wal-00000000000000000001.log (a small valid log, e.g. for waldump or a fuzz seed).
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "wal/record_format.h"

namespace {

using powercut::wal::RecordHeader;
using powercut::wal::RecordType;
using powercut::wal::SegmentHeader;

void HexLines(const std::string& bytes, size_t base, size_t from, size_t to,
              const std::vector<std::pair<size_t, std::string>>& notes) {
  for (size_t line = from; line < to; line += 16) {
    std::string hex, ascii;
    for (size_t i = line; i < line + 16 && i < to; ++i) {
      const auto c = static_cast<unsigned char>(bytes[i]);
      hex += fmt::format("{:02x} ", c);
      ascii += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
    }
    std::string note;
    for (const auto& [at, text] : notes) {
      if (at >= line && at < line + 16) note += (note.empty() ? "" : "; ") + text;
    }
    fmt::print("{:08x}  {:<48} |{:<16}|  {}\n", base + line, hex, ascii, note);
  }
}

}  // namespace

int main(int argc, char** argv) {
  SegmentHeader header;
  header.log_id = 0x1122334455667788ull;
  header.segment_salt = 0x0123456789abcdefull;
  header.first_lsn = 1;
  header.segment_size = 64 << 10;
  header.block_size = 4096;
  const std::string block = powercut::wal::EncodeSegmentHeader(header);

  std::string records;
  const std::string first = "hello";
  const std::string second = "world!";
  RecordHeader r1{static_cast<uint32_t>(first.size()), 1, 0, RecordType::kData};
  RecordHeader r2{static_cast<uint32_t>(second.size()), 2, 1, RecordType::kData};
  powercut::wal::EncodeRecord(
      header.segment_salt, r1,
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(first.data()), first.size()), &records);
  const size_t second_at = records.size();
  powercut::wal::EncodeRecord(
      header.segment_salt, r2,
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(second.data()), second.size()),
      &records);

  fmt::print("Segment header (bytes 0..63 shown; 64..4095 are zero):\n");
  HexLines(block, 0, 0, 64,
           {{0, "0: magic \"PCUTWAL\\0\""},
            {8, "8: version 1, 12: header size 4096"},
            {16, "16: log id, 24: segment salt"},
            {32, "32: first LSN 1, 40: segment size 65536"},
            {48, "48: block size 4096, 52: header CRC32C, 56..: zero"}});
  fmt::print("\nRecord LSN 1 at offset 4096 (32-byte header + 5-byte payload \"hello\"):\n");
  HexLines(records, 4096, 0, second_at,
           {{0, "0: CRC32C(salt ++ bytes 4..), 4: length 5, 8: LSN 1"},
            {16, "16: synced LSN 0, 24: type 1 (data), 25..31: zero"},
            {32, "32: payload"}});
  fmt::print("\nRecord LSN 2 at offset {} (packed right after, no padding):\n", 4096 + second_at);
  HexLines(records, 4096, second_at, records.size(),
           {{second_at, "CRC32C, length 6, LSN 2 (low bytes)"},
            {second_at + 16, "synced LSN 1, type 1, zero"},
            {second_at + 32, "payload \"world!\""}});
  if (argc > 1) {
    std::string file = block + records;
    file.resize(header.segment_size, '\0');
    const std::string path =
        std::string(argv[1]) + "/" + powercut::wal::SegmentFileName(header.first_lsn);
    std::ofstream out(path, std::ios::binary);
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
    if (!out) {
      fmt::print(stderr, "wal_format_example: cannot write {}\n", path);
      return 1;
    }
    fmt::print("\nwrote {}\n", path);
  }
  return 0;
}
