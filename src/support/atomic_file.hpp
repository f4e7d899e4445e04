// Outputs that are never lost: a file is written to a temporary in the same
// directory, every write and the close are checked, the data is fsync'ed, and
// only then is the temporary renamed over the target (and the directory
// fsync'ed). A reader, or a crash, sees the previous file or the whole new one,
// never a half-written or empty one; on any failure the temporary is removed,
// the previous file is left as it was, and E120 names the path and the reason.
//
// A target that exists and is not a regular file (/dev/stdout, a FIFO, a
// terminal) cannot be replaced by a rename: it is written in place, every
// write still checked. A symlink to a regular file is followed: the file it
// points to is replaced, the link kept.
#pragma once
#include <string>
#include <string_view>

namespace tessera {

class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);  // E120 if the temporary cannot be created
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // without commit(): the temporary is removed, the target untouched

  void write(const void* data, size_t size);  // E120 on a failed or short write (a full disk)
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // fsync, close, rename over the target, fsync the directory; E120 on failure.
  void commit();

 private:
  [[noreturn]] void fail_with(const std::string& what, int err);
  void discard() noexcept;

  std::string path_;    // what the caller named (for messages)
  std::string target_;  // what is replaced (the symlink's file, or path_)
  std::string temp_;    // empty when writing in place
  int fd_ = -1;
  bool committed_ = false;
};

// The whole of `bytes` as `path`, atomically (above).
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace tessera
