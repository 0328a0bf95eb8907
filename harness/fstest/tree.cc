#include "harness/fstest/tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/hash.h"
#include "base/status_macros.h"
#include "fmt/format.h"

namespace powercut::fstest {
namespace {

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "." ? name : dir + "/" + name;
}

std::string HashOf(std::string_view bytes) {
  return HashBytes({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}).Hex();
}

std::vector<std::string> BlockHashes(std::string_view bytes) {
  std::vector<std::string> out;
  for (uint64_t at = 0; at < bytes.size(); at += kBlockHashBytes) {
    out.push_back(HashOf(bytes.substr(at, kBlockHashBytes)).substr(0, 16));
  }
  return out;
}

std::string Errno(std::string_view what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

void ReadXattrs(const std::string& path, Node* node) {
  std::vector<char> names(4096);
  ssize_t n = ::llistxattr(path.c_str(), names.data(), names.size());
  if (n < 0) {
    if (errno != ENOTSUP) node->error = Errno("listxattr");
    return;
  }
  for (ssize_t at = 0; at < n;) {
    const std::string name(names.data() + at);
    at += static_cast<ssize_t>(name.size()) + 1;
    // Only the user namespace is the workload's; security.* and system.* belong to the system.
    if (name.rfind("user.", 0) != 0) continue;
    std::vector<char> value(65536);
    const ssize_t v = ::lgetxattr(path.c_str(), name.c_str(), value.data(), value.size());
    if (v < 0) {
      node->error = Errno("getxattr " + name);
      continue;
    }
    node->xattrs[name] = std::string(value.data(), static_cast<size_t>(v));
  }
}

void ReadFile(const std::string& path, Node* node) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC);
  if (fd < 0 && errno == EPERM) fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    node->error = Errno("open");
    return;
  }
  std::string data;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      node->error = Errno("read");
      break;
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  node->data_hash = HashOf(data);
  node->block_hashes = BlockHashes(data);
  node->content = std::move(data);
}

void ReadDir(const std::string& abs, const std::string& rel, Tree* tree, Node* node);

void ReadNode(const std::string& abs, const std::string& rel, Tree* tree) {
  Node node;
  struct stat st {};
  if (::lstat(abs.c_str(), &st) != 0) {
    node.error = Errno("lstat");
    tree->nodes[rel] = node;
    return;
  }
  node.mode = st.st_mode & 07777;
  node.size = static_cast<uint64_t>(st.st_size);
  node.nlink = st.st_nlink;
  node.blocks = static_cast<uint64_t>(st.st_blocks);
  node.ino = st.st_ino;
  if (S_ISDIR(st.st_mode)) {
    node.type = NodeType::kDir;
  } else if (S_ISLNK(st.st_mode)) {
    node.type = NodeType::kSymlink;
    std::vector<char> target(4096);
    const ssize_t n = ::readlink(abs.c_str(), target.data(), target.size());
    if (n < 0) {
      node.error = Errno("readlink");
    } else {
      node.target.assign(target.data(), static_cast<size_t>(n));
    }
  } else {
    node.type = NodeType::kFile;
  }
  if (node.type != NodeType::kSymlink) ReadXattrs(abs, &node);
  if (node.type == NodeType::kFile) ReadFile(abs, &node);
  if (node.type == NodeType::kDir) ReadDir(abs, rel, tree, &node);
  tree->nodes[rel] = std::move(node);
}

void ReadDir(const std::string& abs, const std::string& rel, Tree* tree, Node* node) {
  DIR* dir = ::opendir(abs.c_str());
  if (dir == nullptr) {
    node->error = Errno("opendir");
    return;
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (rel == "." && name == "lost+found") continue;
    names.push_back(name);
  }
  if (errno != 0) node->error = Errno("readdir");
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  node->entries = names;
  for (const std::string& name : names) ReadNode(abs + "/" + name, Join(rel, name), tree);
}

void ModelNode(const ModelFs& model, uint64_t number, const std::string& rel, Tree* tree) {
  const ModelFs::Inode& inode = model.inode(number);
  Node node;
  node.type = inode.type;
  node.ino = number;
  node.nlink = inode.nlink;
  node.xattrs = inode.xattrs;
  if (inode.type == NodeType::kFile) {
    node.size = inode.data.size();
    node.data_hash = HashOf(inode.data);
    node.block_hashes = BlockHashes(inode.data);
  } else if (inode.type == NodeType::kSymlink) {
    node.target = inode.data;
    node.size = inode.data.size();
  } else {
    for (const auto& [name, child] : inode.entries) {
      node.entries.push_back(name);
      ModelNode(model, child, Join(rel, name), tree);
    }
  }
  tree->nodes[rel] = std::move(node);
}

}  // namespace

std::string DataHash(std::string_view bytes) { return HashOf(bytes); }

absl::StatusOr<Tree> ReadTree(const std::string& root) {
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(fmt::format("cannot read the tree at {}: {}", root,
                                           errno != 0 ? std::strerror(errno) : "not a folder"));
  }
  Tree tree;
  ReadNode(root, ".", &tree);
  return tree;
}

Tree ModelTree(const ModelFs& model) {
  Tree tree;
  ModelNode(model, *model.Lookup("."), ".", &tree);
  return tree;
}

nlohmann::json NodeToJson(const Node& n) {
  nlohmann::json j = {{"type", std::string(NodeTypeName(n.type))},
                      {"mode", n.mode},
                      {"size", n.size},
                      {"nlink", n.nlink},
                      {"blocks", n.blocks},
                      {"ino", n.ino}};
  if (!n.xattrs.empty()) j["xattrs"] = n.xattrs;
  if (n.type == NodeType::kSymlink) j["target"] = n.target;
  if (n.type == NodeType::kFile) {
    j["data"] = n.data_hash;
    j["blocks_hash"] = n.block_hashes;
  }
  if (n.type == NodeType::kDir) j["entries"] = n.entries;
  if (!n.error.empty()) j["error"] = n.error;
  return j;
}

absl::StatusOr<Node> NodeFromJson(const nlohmann::json& j) {
  try {
    Node n;
    const std::string type = j.at("type").get<std::string>();
    if (type == "file") {
      n.type = NodeType::kFile;
    } else if (type == "dir") {
      n.type = NodeType::kDir;
    } else if (type == "symlink") {
      n.type = NodeType::kSymlink;
    } else {
      return absl::InvalidArgumentError(fmt::format("unknown node type {}", type));
    }
    n.mode = j.at("mode").get<uint32_t>();
    n.size = j.at("size").get<uint64_t>();
    n.nlink = j.at("nlink").get<uint64_t>();
    n.blocks = j.at("blocks").get<uint64_t>();
    n.ino = j.value("ino", uint64_t{0});
    if (j.contains("xattrs")) n.xattrs = j.at("xattrs").get<std::map<std::string, std::string>>();
    n.target = j.value("target", std::string());
    n.data_hash = j.value("data", std::string());
    if (j.contains("blocks_hash")) {
      n.block_hashes = j.at("blocks_hash").get<std::vector<std::string>>();
    }
    if (j.contains("entries")) n.entries = j.at("entries").get<std::vector<std::string>>();
    n.error = j.value("error", std::string());
    return n;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("a tree node is malformed: {}", e.what()));
  }
}

nlohmann::json TreeToJson(const Tree& tree) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [path, node] : tree.nodes) j[path] = NodeToJson(node);
  return j;
}

absl::StatusOr<Tree> TreeFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("a tree is a JSON object of paths");
  Tree tree;
  for (const auto& [path, value] : j.items()) {
    absl::StatusOr<Node> node = NodeFromJson(value);
    if (!node.ok()) {
      return absl::InvalidArgumentError(fmt::format("{}: {}", path, StatusMessage(node.status())));
    }
    tree.nodes[path] = std::move(*node);
  }
  if (tree.nodes.count(".") == 0) return absl::InvalidArgumentError("a tree without its root");
  return tree;
}

}  // namespace powercut::fstest
