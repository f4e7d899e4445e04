#include "support/file_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace tessera {

namespace {
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe), not a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}
}  // namespace

std::optional<RegularFile> RegularFile::open(const std::string& path, std::string& why) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  if (!stated || !S_ISREG(st.st_mode)) {
    why = stated ? kind_of(st.st_mode) : std::strerror(errno);
    ::close(fd);
    return std::nullopt;
  }
  // Reads of a regular file never block; blocking mode again for clarity of errors.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return RegularFile(fd, static_cast<int64_t>(st.st_size));
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

int64_t RegularFile::read(void* dst, int64_t n) {
  auto* p = static_cast<char*>(dst);
  int64_t done = 0;
  while (done < n) {
    // one call reads at most about 2 GiB on Linux
    const size_t chunk = static_cast<size_t>(std::min<int64_t>(n - done, int64_t{1} << 30));
    const ssize_t got = ::read(fd_, p + done, chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += got;
  }
  return done;
}

std::optional<std::string> read_regular_file(const std::string& path, std::string& why) {
  auto f = RegularFile::open(path, why);
  if (!f) return std::nullopt;
  std::string out;
  char buf[1 << 16];
  while (true) {  // to the end, not to the size at open: the file may grow
    const int64_t got = f->read(buf, sizeof buf);
    if (got < 0) {
      why = std::strerror(errno);
      return std::nullopt;
    }
    out.append(buf, static_cast<size_t>(got));
    if (got < static_cast<int64_t>(sizeof buf)) break;
  }
  return out;
}

}  // namespace tessera
