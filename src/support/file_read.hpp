// Reading a file the user named (IR text, .npy inputs, packets, packages)
// without ever blocking: a FIFO with no writer, a directory or a device is
// refused up front instead of hanging in open() or read() (issue 19).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace tessera {

// A regular file opened for reading; closes on destruction.
class RegularFile {
 public:
  // Opens `path` (non-blocking, so a FIFO cannot hang the open) and checks it
  // is a regular file; nullopt with `why` set otherwise ("is a FIFO", the errno text).
  static std::optional<RegularFile> open(const std::string& path, std::string& why);
  RegularFile(RegularFile&& o) noexcept : fd_(o.fd_), size_(o.size_) { o.fd_ = -1; }
  RegularFile& operator=(RegularFile&&) = delete;
  ~RegularFile();

  int64_t size() const { return size_; }  // at open
  // Reads up to n bytes, looping over short reads: how many (fewer only at
  // the end of the file), or -1 on a read error (errno says which).
  int64_t read(void* dst, int64_t n);

 private:
  RegularFile(int fd, int64_t size) : fd_(fd), size_(size) {}
  int fd_;
  int64_t size_;
};

// The whole of a regular file, or nullopt with `why` set.
std::optional<std::string> read_regular_file(const std::string& path, std::string& why);

}  // namespace tessera
