#include "support/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "support/diagnostic.hpp"

namespace tessera {

namespace fs = std::filesystem;

namespace {

// mkstemp creates 0600; the output gets the mode a plain open() would give it.
mode_t default_file_mode() {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  const mode_t mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

std::string directory_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path) : path_(path), target_(path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const fs::path real = fs::canonical(path, ec);
    if (!ec) target_ = real.string();
  }
  const bool exists = stat(target_.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) fail_with("the path names a directory", EISDIR);
  if (exists && !S_ISREG(st.st_mode)) {  // a device or FIFO: no rename can replace it
    fd_ = ::open(target_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd_ < 0) fail_with("cannot open for writing", errno);
    return;
  }
  const std::string dir = directory_of(target_);
  std::string templ = (fs::path(dir) / ("." + fs::path(target_).filename().string() + ".tmp.XXXXXX")).string();
  fd_ = mkostemp(templ.data(), O_CLOEXEC);
  if (fd_ < 0) fail_with("cannot create a temporary file in '" + dir + "'", errno);
  temp_ = templ;
  // Keep the mode of the file being replaced, else what a new file would get.
  if (fchmod(fd_, exists ? (st.st_mode & 07777) : default_file_mode()) != 0) fail_with("cannot set its mode", errno);
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

void AtomicFile::fail_with(const std::string& what, int err) {
  discard();
  committed_ = true;  // nothing left to clean up
  fail("E120",
       "cannot write '" + path_ + "': " + what + ": " + std::strerror(err) + " (any previous file is left unchanged)");
}

void AtomicFile::write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_with("write failed", errno);
    if (n == 0) fail_with("write made no progress", ENOSPC);
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (temp_.empty()) {  // written in place (a device or FIFO): only the close can still fail
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) fail_with("close failed", errno);
    committed_ = true;
    return;
  }
  if (::fsync(fd_) != 0) fail_with("fsync failed", errno);
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail_with("close failed", errno);
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail_with("cannot rename the temporary into place", errno);
  temp_.clear();
  committed_ = true;
  // The rename is durable once the directory is; some file systems cannot
  // sync a directory (EINVAL), and the file is in place either way.
  const int dfd = ::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    const int sync_rc = ::fsync(dfd);
    const int sync_err = errno;
    ::close(dfd);
    if (sync_rc != 0 && sync_err != EINVAL)
      fail("E120", "wrote '" + path_ + "', but cannot sync its directory: " + std::strerror(sync_err));
  }
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

}  // namespace tessera
