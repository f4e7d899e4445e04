#include "runtime/process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <random>
#include <sstream>

#include "runtime/disk_cache.hpp"

extern char** environ;

namespace tessera::runtime {

namespace fs = std::filesystem;

int run_process(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string output_of(const std::vector<std::string>& argv) {
  std::random_device rd;
  std::string log =
      (fs::temp_directory_path() / ("tessera-id-" + std::to_string(getpid()) + "-" + std::to_string(rd()))).string();
  int rc = run_process(argv, log);
  std::string out = read_text_file(log);
  fs::remove(log);
  return rc == 0 ? out : "";
}

std::string first_line_of_output(const std::vector<std::string>& argv) {
  std::string out = output_of(argv);
  return out.substr(0, out.find('\n'));
}

std::vector<std::string> split_flags(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace tessera::runtime
