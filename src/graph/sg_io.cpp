#include "graph/sg_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "graph/edge_check.hpp"
#include "graph/progress.hpp"

namespace dk::graph {

static bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

Format format_of(const std::string& path) {
  if (ends_with(path, ".wsg")) return Format::kWsg;
  if (ends_with(path, ".sg")) return Format::kSg;
  if (ends_with(path, ".wel")) return Format::kWel;
  if (ends_with(path, ".el")) return Format::kEl;
  return Format::kUnknown;
}

static std::string sys_err(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Full-length pread in 64 MiB pieces, drawing progress.
static bool pread_all(int fd, void* dst, uint64_t bytes, uint64_t off, Progress* bar, uint64_t& done) {
  auto* p = static_cast<char*>(dst);
  while (bytes > 0) {
    const size_t chunk = bytes < (64u << 20) ? bytes : (64u << 20);
    const ssize_t r = pread(fd, p, chunk, static_cast<off_t>(off));
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return false;
    }
    p += r;
    off += static_cast<uint64_t>(r);
    bytes -= static_cast<uint64_t>(r);
    done += static_cast<uint64_t>(r);
    if (bar) bar->update(done);
  }
  return true;
}

static bool write_all(int fd, const void* src, uint64_t bytes, Progress* bar, uint64_t& done) {
  auto* p = static_cast<const char*>(src);
  while (bytes > 0) {
    const size_t chunk = bytes < (64u << 20) ? bytes : (64u << 20);
    const ssize_t r = write(fd, p, chunk);
    if (r <= 0) return false;
    p += r;
    bytes -= static_cast<uint64_t>(r);
    done += static_cast<uint64_t>(r);
    if (bar) bar->update(done);
  }
  return true;
}

static bool check_offsets(const Csr& g, std::string& err, const std::string& path) {
  if (g.offsets[0] != 0 || g.offsets[g.n] != g.m) {
    err = path + ": corrupt offsets (first " + std::to_string(g.offsets[0]) + ", last " +
          std::to_string(g.offsets[g.n]) + ", edges " + std::to_string(g.m) + "); regenerate the file";
    return false;
  }
  for (int64_t u = 0; u < g.n; u++) {
    if (g.offsets[u + 1] < g.offsets[u]) {
      err = path + ": offsets decrease at vertex " + std::to_string(u) + "; regenerate the file";
      return false;
    }
  }
  return true;
}

static bool check_edges(const Csr& g, std::string& err, const std::string& path) {
  const int64_t bad = first_bad_entry(g.edges.data(), uint64_t(g.m), g.weighted, g.n);
  if (bad < 0) return true;
  int32_t v, w;
  entry_at(g.edges.data(), uint64_t(bad), g.weighted, v, w);
  err = path + ": " + corrupt_entry_text(g, v, w, bad) +
        "; regenerate the file";
  return false;
}

bool read_sg(const std::string& path, bool load_edges, Csr& g, std::string& err) {
  const Format fmt = format_of(path);
  if (fmt != Format::kSg && fmt != Format::kWsg) {
    err = path + ": expected a .sg or .wsg file (convert with `daxkit graph convert`)";
    return false;
  }
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    err = sys_err("cannot open", path);
    return false;
  }
  struct stat st {};
  fstat(fd, &st);
  char header[kSgHeaderBytes];
  uint64_t done = 0;
  bool ok = pread_all(fd, header, kSgHeaderBytes, 0, nullptr, done);
  g.directed = ok && header[0] != 0;
  std::memcpy(&g.m, header + 1, 8);
  std::memcpy(&g.n, header + 9, 8);
  g.weighted = fmt == Format::kWsg;
  // m is bounded by the file size before file_bytes() multiplies it (a crafted m would wrap the product).
  if (!ok || g.n <= 0 || g.m < 0 || g.n > INT32_MAX || uint64_t(g.m) > uint64_t(st.st_size) / g.edge_bytes() ||
      uint64_t(st.st_size) < g.file_bytes()) {
    err = path + ": not a GAP serialized graph (bad header or truncated: " + std::to_string(st.st_size) +
          " bytes); check the suffix (.sg unweighted, .wsg weighted)";
    close(fd);
    return false;
  }
  const uint64_t index_bytes = uint64_t(g.n + 1) * sizeof(Offset);
  const uint64_t edge_bytes = uint64_t(g.m) * g.edge_bytes();
  Progress bar("load", index_bytes + (load_edges ? edge_bytes : 0));
  g.offsets.allocate(size_t(g.n + 1));
  done = 0;
  ok = pread_all(fd, g.offsets.data(), index_bytes, kSgHeaderBytes, &bar, done);
  if (ok && load_edges && g.m > 0) {
    g.edges.allocate(edge_bytes);
    ok = pread_all(fd, g.edges.data(), edge_bytes, g.edges_file_offset(), &bar, done);
  }
  bar.finish();
  close(fd);
  if (!ok) {
    err = sys_err("cannot read", path);
    return false;
  }
  return check_offsets(g, err, path) && (!load_edges || check_edges(g, err, path));
}

bool write_sg(const std::string& path, const Csr& g, std::string& err) {
  const Format fmt = format_of(path);
  if ((fmt == Format::kWsg) != g.weighted || (fmt != Format::kSg && fmt != Format::kWsg)) {
    err = path + ": suffix must be " + (g.weighted ? ".wsg" : ".sg") + " for this " +
          (g.weighted ? "weighted" : "unweighted") + " graph";
    return false;
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    err = sys_err("cannot create", path);
    return false;
  }
  char header[kSgHeaderBytes];
  header[0] = g.directed ? 1 : 0;
  std::memcpy(header + 1, &g.m, 8);
  std::memcpy(header + 9, &g.n, 8);
  const uint64_t edge_bytes = uint64_t(g.m) * g.edge_bytes();
  Progress bar("write", g.file_bytes());
  uint64_t done = 0;
  bool ok = write_all(fd, header, kSgHeaderBytes, &bar, done) &&
            write_all(fd, g.offsets.data(), uint64_t(g.n + 1) * sizeof(Offset), &bar, done) &&
            write_all(fd, g.edges.data(), edge_bytes, &bar, done);
  bar.finish();
  if (close(fd) != 0) ok = false;
  if (!ok) err = sys_err("cannot write", path);
  return ok;
}

bool read_el(const std::string& path, bool weighted, std::vector<EdgeTriple>& edges, int64_t& n,
             std::string& err) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    err = sys_err("cannot open", path);
    return false;
  }
  n = 0;
  long long u, v, w = 1;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    const int got = weighted ? std::sscanf(line, "%lld %lld %lld", &u, &v, &w) : std::sscanf(line, "%lld %lld", &u, &v);
    if (got <= 0) continue;
    if (got < (weighted ? 3 : 2) || u < 0 || v < 0 || u >= INT32_MAX || v >= INT32_MAX) {
      err = path + ": bad edge line '" + std::string(line) + "' (want " + (weighted ? "u v w" : "u v") +
            " with 0 <= u, v < 2^31)";
      std::fclose(f);
      return false;
    }
    edges.push_back({NodeId(u), NodeId(v), int32_t(w)});
    if (u + 1 > n) n = u + 1;
    if (v + 1 > n) n = v + 1;
  }
  std::fclose(f);
  return true;
}

bool write_el(const std::string& path, const Csr& g, std::string& err) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    err = sys_err("cannot create", path);
    return false;
  }
  const bool wel = format_of(path) == Format::kWel;
  for (int64_t u = 0; u < g.n; u++) {
    for (Offset e = g.offsets[u]; e < g.offsets[u + 1]; e++) {
      const NodeId v = g.neighbour(e);
      if (!g.directed && v < u) continue;  // each undirected edge once
      if (wel) std::fprintf(f, "%lld %d %d\n", (long long)u, v, g.weighted ? g.weight(e) : 1);
      else std::fprintf(f, "%lld %d\n", (long long)u, v);
    }
  }
  if (std::fclose(f) != 0) {
    err = sys_err("cannot write", path);
    return false;
  }
  return true;
}

}  // namespace dk::graph
