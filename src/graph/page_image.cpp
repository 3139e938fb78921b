#include "graph/page_image.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

#include "async/device.hpp"
#include "graph/edge_check.hpp"
#include "graph/progress.hpp"

namespace dk::graph {

namespace {

constexpr uint64_t kPage = async::kPageBytes;
constexpr size_t kChunkBytes = 64u << 20;
static_assert(kPage % 8 == 0, "a page holds whole weighted entries");

struct ImageHeader {
  uint64_t magic;
  int64_t n;
  int64_t m;
  uint64_t edge_bytes;
  uint64_t image_bytes;
};

uint64_t round_up_page(uint64_t x) { return (x + kPage - 1) & ~(kPage - 1); }

}  // namespace

PageLayoutStats compute_page_layout(Csr& g) {
  PageLayoutStats st;
  g.page_addr = HugeArray<uint64_t>(size_t(g.n));
  uint64_t pos = kPage;  // page 0 is the header
  for (int64_t u = 0; u < g.n; u++) {
    const uint64_t bytes = g.list_bytes(NodeId(u));
    const uint64_t in_page = pos & (kPage - 1);
    if (bytes > kPage || (bytes > 0 && in_page + bytes > kPage)) {
      const uint64_t aligned = round_up_page(pos);
      st.pad_bytes += aligned - pos;
      pos = aligned;
    }
    if (bytes > kPage) st.lists_multi_page++;
    g.page_addr[size_t(u)] = pos;
    pos += bytes;
  }
  st.image_bytes = round_up_page(pos);
  return st;
}

bool page_image_matches(const std::string& img_path, const Csr& g) {
  const int fd = open(img_path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  ImageHeader h{};
  const bool ok = pread(fd, &h, sizeof h, 0) == ssize_t(sizeof h);
  struct stat st {};
  fstat(fd, &st);
  close(fd);
  return ok && h.magic == kImageMagic && h.n == g.n && h.m == g.m && h.edge_bytes == g.edge_bytes() &&
         uint64_t(st.st_size) == h.image_bytes;
}

namespace {

// Sequential writer with a 64 MiB buffer: the image is produced strictly in increasing offsets.
class BufWriter {
 public:
  explicit BufWriter(int fd) : fd_(fd), buf_(kChunkBytes) {}
  bool put(const void* p, size_t n) {
    const auto* c = static_cast<const std::byte*>(p);
    while (ok_ && n > 0) {
      const size_t k = std::min(n, buf_.size() - fill_);
      std::memcpy(buf_.data() + fill_, c, k);
      fill_ += k, c += k, n -= k, pos_ += k;
      if (fill_ == buf_.size()) flush();
    }
    return ok_;
  }
  bool zeros(uint64_t n) {
    while (ok_ && n > 0) {
      const size_t k = size_t(std::min<uint64_t>(n, buf_.size() - fill_));
      std::memset(buf_.data() + fill_, 0, k);
      fill_ += k, n -= k, pos_ += k;
      if (fill_ == buf_.size()) flush();
    }
    return ok_;
  }
  bool flush() {
    if (ok_ && fill_ > 0) ok_ = write(fd_, buf_.data(), fill_) == ssize_t(fill_);
    fill_ = 0;
    return ok_;
  }
  uint64_t pos() const { return pos_; }

 private:
  int fd_;
  std::vector<std::byte> buf_;
  size_t fill_ = 0;
  uint64_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

bool write_page_image(const std::string& sg_path, const Csr& g, const std::string& img_path, std::string& err) {
  if (g.page_addr.empty()) {
    err = "internal: compute_page_layout() before write_page_image()";
    return false;
  }
  const int in = open(sg_path.c_str(), O_RDONLY);
  const std::string tmp = img_path + ".tmp";
  const int out = in < 0 ? -1 : open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0) {
    err = std::string("cannot open ") + (in < 0 ? sg_path : tmp) + ": " + std::strerror(errno);
    if (in >= 0) close(in);
    return false;
  }
  const uint64_t eb = g.edge_bytes();
  const uint64_t image_bytes =
      round_up_page(std::max<uint64_t>(kPage, g.page_addr[size_t(g.n - 1)] + g.list_bytes(NodeId(g.n - 1))));
  BufWriter w(out);
  ImageHeader h{kImageMagic, g.n, g.m, eb, image_bytes};
  bool ok = w.put(&h, sizeof h) && w.zeros(kPage - sizeof h);
  std::vector<std::byte> src(kChunkBytes);
  Progress bar("image", uint64_t(g.m));
  int64_t u = 0;
  for (uint64_t e = 0; ok && e < uint64_t(g.m);) {  // e: first source edge of this chunk
    const uint64_t count = std::min<uint64_t>(uint64_t(g.m) - e, kChunkBytes / eb);
    ok = pread(in, src.data(), count * eb, off_t(g.edges_file_offset() + e * eb)) == ssize_t(count * eb);
    const int64_t bad = ok ? first_bad_entry(src.data(), count, g.weighted, g.n) : -1;
    if (bad >= 0) {
      int32_t v, weight;
      entry_at(src.data(), uint64_t(bad), g.weighted, v, weight);
      err = sg_path + ": " + corrupt_entry_text(g, v, weight, int64_t(e) + bad) + "; regenerate the file";
      ok = false;
    }
    for (uint64_t i = 0; ok && i < count;) {
      while (uint64_t(g.offsets[size_t(u) + 1]) <= e + i) u++;  // the list holding edge e + i
      const uint64_t target = g.page_addr[size_t(u)] + (e + i - uint64_t(g.offsets[size_t(u)])) * eb;
      const uint64_t take = std::min<uint64_t>(count - i, uint64_t(g.offsets[size_t(u) + 1]) - (e + i));
      if (target < w.pos()) {
        err = "internal: page image layout is not monotonic at vertex " + std::to_string(u);
        ok = false;
        break;
      }
      ok = w.zeros(target - w.pos()) && w.put(src.data() + i * eb, take * eb);
      i += take;
    }
    e += count;
    bar.update(e);
  }
  ok = ok && w.zeros(image_bytes - w.pos()) && w.flush();
  bar.finish();
  close(in);
  if (close(out) != 0) ok = false;
  if (ok && rename(tmp.c_str(), img_path.c_str()) != 0) ok = false;
  if (!ok && err.empty()) err = "cannot write page image " + img_path + ": " + std::strerror(errno);
  if (!ok) unlink(tmp.c_str());
  return ok;
}

}  // namespace dk::graph
