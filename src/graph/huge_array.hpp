// Large arrays on anonymous memory advised for transparent huge pages (the paper allocates every big
// array on huge pages: fewer TLB misses for every backend alike). Move-only; unmapped on destruction.
#pragma once
#include <sys/mman.h>

#include <cassert>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace dk::graph {

template <class T>
class HugeArray {
 public:
  HugeArray() = default;
  explicit HugeArray(size_t count) { allocate(count); }
  HugeArray(HugeArray&& o) noexcept { swap(o); }
  HugeArray& operator=(HugeArray&& o) noexcept {
    HugeArray t(std::move(o));
    swap(t);
    return *this;
  }
  HugeArray(const HugeArray&) = delete;
  HugeArray& operator=(const HugeArray&) = delete;
  ~HugeArray() {
    if (data_ != nullptr) munmap(data_, mapped_bytes_);
  }

  void allocate(size_t count) {
    assert(data_ == nullptr);
    count_ = count;
    mapped_bytes_ = (count * sizeof(T) + (2u << 20) - 1) & ~size_t{(2u << 20) - 1};
    if (mapped_bytes_ == 0) mapped_bytes_ = 2u << 20;
    void* p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "daxkit graph: cannot map %zu bytes (%s); use a smaller graph or a file backend\n",
                   mapped_bytes_, std::strerror(errno));
      std::exit(1);
    }
    madvise(p, mapped_bytes_, MADV_HUGEPAGE);
    data_ = static_cast<T*>(p);
  }
  void swap(HugeArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
    std::swap(mapped_bytes_, o.mapped_bytes_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  T& operator[](size_t i) {
    assert(i < count_);
    return data_[i];
  }
  const T& operator[](size_t i) const {
    assert(i < count_);
    return data_[i];
  }
  T* begin() { return data_; }
  T* end() { return data_ + count_; }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
  size_t mapped_bytes_ = 0;
};

}  // namespace dk::graph
