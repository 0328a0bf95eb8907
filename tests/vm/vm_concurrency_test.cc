// The NBD server and the ack channel under concurrency, in process (label "concurrency": also
// run under TSan; no qemu). A client of our own speaks NBD over the unix socket from two threads
// (one pipelines requests, one reads replies) while a third sends acks on the ack channel; the
// server's thread and the channel's thread share one Recorder. The trace must be the completion
// order the client saw, and every ack mark must follow every request completed before the ack
// was sent.
#include <endian.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/tsan_mutex.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/trace/recorder.h"
#include "harness/trace/trace_reader.h"
#include "harness/vm/devices/ack_channel.h"
#include "harness/vm/devices/nbd_server.h"
#include "harness/vm/machine/disk_image.h"
#include "tests/vm/vm_temp_dir.h"

namespace powercut::vm {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kDeviceBytes = 1 << 20;
constexpr uint32_t kBlock = 4096;

int ConnectUnix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool ReadExact(int fd, void* buf, size_t n) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteExact(int fd, const void* buf, size_t n) {
  const auto* p = static_cast<const uint8_t*>(buf);
  while (n > 0) {
    ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

template <typename T>
void PutBE(std::string& s, T v) {
  for (int i = sizeof(T) - 1; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetBE(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

// A minimal NBD client: fixed-newstyle handshake with NBD_OPT_GO, then simple requests. Send*()
// may be called from one thread while ReadReply() runs on another (the protocol is pipelined).
class NbdClient {
 public:
  ~NbdClient() {
    if (fd_ >= 0) close(fd_);
  }

  // Returns "" on success, else what went wrong.
  std::string Connect(const std::string& socket_path) {
    fd_ = ConnectUnix(socket_path);
    if (fd_ < 0) return "connect failed";
    uint8_t hello[18];
    if (!ReadExact(fd_, hello, sizeof hello)) return "no greeting";
    if (GetBE(hello, 8) != 0x4e42444d41474943ULL || GetBE(hello + 8, 8) != 0x49484156454F5054ULL) {
      return "bad greeting magic";
    }
    std::string s;
    PutBE<uint32_t>(s, 3);  // FIXED_NEWSTYLE | NO_ZEROES
    PutBE<uint64_t>(s, 0x49484156454F5054ULL);
    PutBE<uint32_t>(s, 7);  // NBD_OPT_GO
    PutBE<uint32_t>(s, 6);  // name length (0) + number of info requests (0)
    PutBE<uint32_t>(s, 0);
    PutBE<uint16_t>(s, 0);
    if (!WriteExact(fd_, s.data(), s.size())) return "cannot send NBD_OPT_GO";
    for (;;) {
      uint8_t rep[20];
      if (!ReadExact(fd_, rep, sizeof rep)) return "option reply cut short";
      const uint32_t type = static_cast<uint32_t>(GetBE(rep + 12, 4));
      std::string data(GetBE(rep + 16, 4), '\0');
      if (!ReadExact(fd_, data.data(), data.size())) return "option data cut short";
      if (type == 1) break;  // NBD_REP_ACK
      if (type & 0x80000000u) return fmt::format("option error {:#x}", type);
      if (type == 3 && data.size() >= 12 &&
          GetBE(reinterpret_cast<uint8_t*>(data.data()), 2) == 0) {
        export_bytes_ = GetBE(reinterpret_cast<uint8_t*>(data.data()) + 2, 8);
        flags_ = static_cast<uint16_t>(GetBE(reinterpret_cast<uint8_t*>(data.data()) + 10, 2));
      }
    }
    return "";
  }

  bool SendWrite(uint64_t handle, uint64_t offset, const std::vector<uint8_t>& data, bool fua) {
    std::string s = Header(1, fua ? 1 : 0, handle, offset, static_cast<uint32_t>(data.size()));
    s.append(reinterpret_cast<const char*>(data.data()), data.size());
    return WriteExact(fd_, s.data(), s.size());
  }
  bool SendFlush(uint64_t handle) {
    std::string s = Header(3, 0, handle, 0, 0);
    return WriteExact(fd_, s.data(), s.size());
  }
  bool SendDisconnect() {
    std::string s = Header(2, 0, 0, 0, 0);
    return WriteExact(fd_, s.data(), s.size());
  }
  // A simple reply (writes and flushes carry no payload): false at end of stream.
  bool ReadReply(uint64_t* handle, uint32_t* error) {
    uint8_t r[16];
    if (!ReadExact(fd_, r, sizeof r)) return false;
    if (GetBE(r, 4) != 0x67446698) return false;
    *error = static_cast<uint32_t>(GetBE(r + 4, 4));
    *handle = GetBE(r + 8, 8);
    return true;
  }
  // What a power cut does to the client: the connection is gone (safe from any thread).
  void HangUp() { shutdown(fd_, SHUT_RDWR); }

  uint64_t export_bytes() const { return export_bytes_; }
  uint16_t flags() const { return flags_; }

 private:
  static std::string Header(uint16_t type, uint16_t flags, uint64_t handle, uint64_t offset,
                            uint32_t length) {
    std::string s;
    PutBE<uint32_t>(s, 0x25609513);
    PutBE<uint16_t>(s, flags);
    PutBE<uint16_t>(s, type);
    PutBE<uint64_t>(s, handle);
    PutBE<uint64_t>(s, offset);
    PutBE<uint32_t>(s, length);
    return s;
  }

  int fd_ = -1;
  uint64_t export_bytes_ = 0;
  uint16_t flags_ = 0;
};

// Ack ids handed from the thread that reads replies to the thread that sends acks.
class AckQueue {
 public:
  void Push(std::string id) {
    powercut::MutexLock lock(&mu_);
    ids_.push_back(std::move(id));
    cv_.Signal();
  }
  void Close() {
    powercut::MutexLock lock(&mu_);
    closed_ = true;
    cv_.Signal();
  }
  // Waits for the next id; false once closed and empty.
  bool Pop(std::string* id) {
    powercut::MutexLock lock(&mu_);
    while (ids_.empty() && !closed_) powercut::Wait(&cv_, &mu_);
    if (ids_.empty()) return false;
    *id = std::move(ids_.front());
    ids_.pop_front();
    return true;
  }

 private:
  // wal/tsan_mutex.h: TSan cannot see through Debian's prebuilt absl::Mutex on its own.
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::deque<std::string> ids_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// A request of the test: a write (whose first 8 bytes are its handle) or a flush.
struct Request {
  uint64_t handle;
  bool flush;
  uint64_t offset;
  bool fua;
};

std::vector<uint8_t> Payload(uint64_t handle) {
  std::vector<uint8_t> data(kBlock, static_cast<uint8_t>(handle));
  std::memcpy(data.data(), &handle, sizeof handle);
  return data;
}

// Requests as the trace lists them: "w<handle>" or "flush"; marks as "ack:<id>".
std::vector<std::string> TraceKinds(const std::string& trace_path) {
  std::vector<std::string> kinds;
  auto trace = harness::TraceFile::Open(trace_path);
  EXPECT_TRUE(trace.ok()) << trace.status();
  if (!trace.ok()) return kinds;
  for (const auto& e : (*trace)->trace().entries) {
    if (e.is_mark()) {
      kinds.push_back(e.mark);
    } else if (e.is_flush() && e.header.nr_sectors == 0) {
      kinds.emplace_back("flush");
    } else {
      absl::Span<const uint8_t> data = (*trace)->data(e);
      uint64_t handle = 0;
      if (data.size() >= sizeof handle) std::memcpy(&handle, data.data(), sizeof handle);
      kinds.push_back(fmt::format("w{}", handle));
    }
  }
  return kinds;
}

struct Served {
  explicit Served(const VmTempDir& dir) {
    image = dir / "disk.img";
    EXPECT_TRUE(CreateSparseImage(image, kDeviceBytes).ok());
    auto rec = harness::Recorder::Create({.log_path = dir / "trace.log",
                                          .sector_size = 512,
                                          .device_bytes = kDeviceBytes,
                                          .base_image = ""});
    EXPECT_TRUE(rec.ok()) << rec.status();
    recorder = std::move(*rec);
    auto srv = NbdServer::Start({.socket_path = dir / "nbd.sock",
                                 .image_path = image,
                                 .recorder = recorder.get(),
                                 .atomic_unit = 4096,
                                 .lying_window = 64});
    EXPECT_TRUE(srv.ok()) << srv.status();
    server = std::move(*srv);
  }
  std::string image;
  std::unique_ptr<harness::Recorder> recorder;
  std::unique_ptr<NbdServer> server;
};

TEST(NbdConcurrencyTest, TraceIsTheCompletionOrderAndEachAckFollowsWhatCompletedBeforeIt) {
  VmTempDir dir;
  Served s(dir);
  ASSERT_NE(s.server, nullptr);
  auto channel = AckChannel::Start({.socket_path = dir / "ack.sock",
                                    .ack_log_path = dir / "acks.jsonl",
                                    .recorder = s.recorder.get(),
                                    .on_ack = nullptr,
                                    .on_event = nullptr});
  ASSERT_TRUE(channel.ok()) << channel.status();

  NbdClient client;
  ASSERT_EQ(client.Connect(dir / "nbd.sock"), "");
  EXPECT_EQ(client.export_bytes(), kDeviceBytes);
  EXPECT_EQ(client.flags() & (4 | 8), 4 | 8);  // SEND_FLUSH | SEND_FUA

  constexpr int kRequests = 600;
  std::vector<Request> requests;
  std::mt19937_64 rng(42);
  for (uint64_t h = 1; h <= kRequests; ++h) {
    bool flush = rng() % 6 == 0;
    requests.push_back({h, flush, (rng() % (kDeviceBytes / kBlock)) * kBlock, rng() % 9 == 0});
  }

  // Acks: after every 7th reply, ack <n> goes to a queue; the acker thread sends it. Each ack
  // remembers how many replies the client had when it was queued.
  AckQueue queue;
  std::vector<size_t> replies_before_ack;  // written by the receiver only, read after join

  std::thread sender([&] {
    for (const Request& r : requests) {
      bool ok = r.flush ? client.SendFlush(r.handle)
                        : client.SendWrite(r.handle, r.offset, Payload(r.handle), r.fua);
      if (!ok) return;
    }
  });
  std::vector<uint64_t> reply_order;  // the receiver's; read after join
  std::thread receiver([&] {
    for (int i = 0; i < kRequests; ++i) {
      uint64_t handle;
      uint32_t error;
      if (!client.ReadReply(&handle, &error)) break;
      EXPECT_EQ(error, 0u);
      reply_order.push_back(handle);
      if (reply_order.size() % 7 == 0) {
        replies_before_ack.push_back(reply_order.size());
        queue.Push(std::to_string(replies_before_ack.size()));
      }
    }
    queue.Close();
  });
  std::thread acker([&] {
    int fd = ConnectUnix(dir / "ack.sock");
    ASSERT_GE(fd, 0);
    std::string id;
    while (queue.Pop(&id)) {
      std::string line = "ack " + id + "\n";
      ASSERT_TRUE(WriteExact(fd, line.data(), line.size()));
    }
    close(fd);
  });
  sender.join();
  receiver.join();
  acker.join();
  EXPECT_TRUE(client.SendDisconnect());
  (*channel)->Stop();  // drains what the acker sent
  s.server->Stop();
  ASSERT_TRUE(s.server->status().ok()) << s.server->status();
  ASSERT_TRUE((*channel)->status().ok()) << (*channel)->status();
  ASSERT_TRUE(s.recorder->Finish().ok());
  ASSERT_EQ(reply_order.size(), static_cast<size_t>(kRequests));
  EXPECT_EQ(s.server->requests(), static_cast<uint64_t>(kRequests));

  // The requests in the trace are exactly the replies, in reply order (completion order).
  std::map<uint64_t, const Request*> by_handle;
  for (const Request& r : requests) by_handle[r.handle] = &r;
  std::vector<std::string> expected_requests;
  for (uint64_t h : reply_order) {
    expected_requests.push_back(by_handle[h]->flush ? "flush" : fmt::format("w{}", h));
  }
  std::vector<std::string> kinds = TraceKinds(dir / "trace.log");
  std::vector<std::string> trace_requests;
  std::vector<size_t> requests_before_mark;
  std::vector<std::string> marks;
  for (const std::string& k : kinds) {
    if (k.rfind("ack:", 0) == 0) {
      marks.push_back(k.substr(4));
      requests_before_mark.push_back(trace_requests.size());
    } else {
      trace_requests.push_back(k);
    }
  }
  EXPECT_EQ(trace_requests, expected_requests);
  // Every ack arrived, in order, each after every request completed before it was sent.
  ASSERT_EQ(marks.size(), replies_before_ack.size());
  for (size_t i = 0; i < marks.size(); ++i) {
    EXPECT_EQ(marks[i], std::to_string(i + 1));
    EXPECT_GE(requests_before_mark[i], replies_before_ack[i]) << "ack " << marks[i];
  }
  EXPECT_EQ((*channel)->acks().size(), replies_before_ack.size());
}

TEST(NbdConcurrencyTest, AnArmedCutFiresAtAWriteCompletionAndNothingRunsAfterIt) {
  for (uint64_t cut_at : {1, 5, 13}) {
    VmTempDir dir;
    Served s(dir);
    ASSERT_NE(s.server, nullptr);
    NbdClient client;
    ASSERT_EQ(client.Connect(dir / "nbd.sock"), "");
    // One flushed write, then volatile ones; FUA writes do not count towards the cut.
    std::vector<Request> requests = {{1, false, 0, false}, {2, true, 0, false}};
    for (uint64_t h = 3; h < 40; ++h) requests.push_back({h, false, h * kBlock, h % 4 == 0});
    std::atomic<int> cuts{0};
    s.server->ArmCut(cut_at, [&] {
      ++cuts;
      client.HangUp();  // as SIGKILL of qemu
    });
    std::thread sender([&] {
      for (const Request& r : requests) {
        bool ok = r.flush ? client.SendFlush(r.handle)
                          : client.SendWrite(r.handle, r.offset, Payload(r.handle), r.fua);
        if (!ok) return;
      }
    });
    std::vector<uint64_t> replies;
    uint64_t handle;
    uint32_t error;
    while (client.ReadReply(&handle, &error)) replies.push_back(handle);
    sender.join();
    EXPECT_EQ(cuts.load(), 1);
    EXPECT_TRUE(s.server->cut());

    // The trace ends with the cut write, the cut_at-th non-FUA write after arming: the client
    // never got its reply, and nothing after it executed.
    std::vector<std::string> expected;
    uint64_t non_fua = 0, cut_write = 0;
    for (const Request& r : requests) {
      expected.push_back(r.flush ? "flush" : fmt::format("w{}", r.handle));
      if (!r.flush && !r.fua && ++non_fua == cut_at) {
        cut_write = r.handle;
        break;
      }
    }
    // Every write after the last flush was volatile at the cut (FUA ones are kept).
    const auto last_flush = std::find(expected.rbegin(), expected.rend(), "flush");
    const uint64_t volatile_writes = static_cast<uint64_t>(last_flush - expected.rbegin());
    auto report = s.server->ApplyPowerCut({.mode = harness::CacheMode::kOn}, cut_at);
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_TRUE(s.recorder->Finish().ok());
    EXPECT_EQ(TraceKinds(dir / "trace.log"), expected) << "cut at " << cut_at;
    EXPECT_THAT(replies, ::testing::Not(::testing::Contains(cut_write)));
    EXPECT_EQ(report->candidates, volatile_writes) << "cut at " << cut_at;
    EXPECT_GE(report->candidates, 1u);
  }
}

}  // namespace
}  // namespace powercut::vm
