// Outputs are never lost: a failed write (a full disk, simulated with
// RLIMIT_FSIZE in a forked child) leaves the previous file intact and no
// temporary behind, and reports E120.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/npy.hpp"
#include "runtime/tensor.hpp"
#include "support/atomic_file.hpp"
#include "support/diagnostic.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const fs::path d = fs::path(::testing::TempDir()) / ("atomic_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int entries(const std::string& dir) {
  int n = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// Runs `body` in a child whose files may not grow past `limit` bytes (writes
// beyond it fail with EFBIG, as on a full disk); returns the child's exit code:
// 0 if `body` returned, 1 if it threw E120, 2 for anything else.
int in_child_with_file_limit(rlim_t limit, const std::function<void()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit r{limit, limit};
    setrlimit(RLIMIT_FSIZE, &r);
    try {
      body();
      _exit(0);
    } catch (const Error& e) {
      _exit(e.code() == "E120" && std::string(e.what()).find("cannot write") != std::string::npos ? 1 : 2);
    } catch (...) {
      _exit(2);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

TEST(AtomicFile, ReplacesWholeFile) {
  const std::string dir = fresh_dir("replace"), path = dir + "/out.txt";
  write_file_atomic(path, "first");
  write_file_atomic(path, "second, longer");
  EXPECT_EQ(slurp(path), "second, longer");
  EXPECT_EQ(entries(dir), 1);  // no temporary left
}

TEST(AtomicFile, FullDiskKeepsThePreviousFile) {
  const std::string dir = fresh_dir("full"), path = dir + "/out.bin";
  write_file_atomic(path, "previous content");
  EXPECT_EQ(in_child_with_file_limit(4096, [&] { write_file_atomic(path, std::string(1 << 20, 'x')); }), 1);
  EXPECT_EQ(slurp(path), "previous content");
  EXPECT_EQ(entries(dir), 1);
}

TEST(AtomicFile, FullDiskLeavesNoNewFile) {
  const std::string dir = fresh_dir("none"), path = dir + "/out.bin";
  EXPECT_EQ(in_child_with_file_limit(4096, [&] { write_file_atomic(path, std::string(1 << 20, 'x')); }), 1);
  EXPECT_FALSE(fs::exists(path));  // never a half-written or empty target
  EXPECT_EQ(entries(dir), 0);
}

TEST(AtomicFile, NpyOnFullDiskKeepsThePreviousArray) {
  const std::string dir = fresh_dir("npy"), path = dir + "/out.npy";
  Tensor small = Tensor::empty(DType::F32, {4});
  write_npy(path, small);
  const std::string before = slurp(path);
  Tensor big = Tensor::empty(DType::F32, {1 << 18});
  EXPECT_EQ(in_child_with_file_limit(64 * 1024, [&] { write_npy(path, big); }), 1);
  EXPECT_EQ(slurp(path), before);
  EXPECT_EQ(entries(dir), 1);
}

TEST(AtomicFile, UnwritableDirectoryIsE120) {
  try {
    write_file_atomic(fresh_dir("missing") + "/no/such/dir/x", "x");
    FAIL() << "expected E120";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E120");
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
}

TEST(AtomicFile, AbandonedWriteRemovesTheTemporary) {
  const std::string dir = fresh_dir("abandon"), path = dir + "/out.txt";
  write_file_atomic(path, "kept");
  {
    AtomicFile f(path);
    f.write("half");
  }  // no commit: as when an exception unwinds
  EXPECT_EQ(slurp(path), "kept");
  EXPECT_EQ(entries(dir), 1);
}

TEST(AtomicFile, DeviceIsWrittenInPlaceAndChecked) {
  write_file_atomic("/dev/null", "discarded");  // not replaced by a regular file
  EXPECT_FALSE(fs::is_regular_file("/dev/null"));
  if (fs::exists("/dev/full")) {
    try {
      write_file_atomic("/dev/full", "x");
      FAIL() << "expected E120";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), "E120");
      EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
    }
  }
}

TEST(AtomicFile, SymlinkKeptAndItsFileReplaced) {
  const std::string dir = fresh_dir("link");
  write_file_atomic(dir + "/real.txt", "old");
  fs::create_symlink("real.txt", dir + "/link.txt");
  write_file_atomic(dir + "/link.txt", "new");
  EXPECT_TRUE(fs::is_symlink(dir + "/link.txt"));
  EXPECT_EQ(slurp(dir + "/real.txt"), "new");
}

}  // namespace
}  // namespace tessera
