// Tests for src/runtime/disk_cache and cache_dir: what makes an entry valid
// (exactly), rebuilds of everything else, the artifact check at load, the
// private root, the size cap's least-recently-used order and the reclaiming
// of temp directories. Entries here hold plain text files: no compiler runs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/disk_cache.hpp"
#include "support/diagnostic.hpp"
#include "support/sha256.hpp"

namespace tessera::runtime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kKey = std::string(64, 'a');
const std::string kSource = "int kernel();\n";

// A fresh cache root per test, removed afterwards.
class DiskCacheTest : public testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::TempDir() + "tessera_cache_" + std::to_string(getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(root_, fs::perms::owner_all, ec);
    fs::remove_all(root_, ec);
  }

  EntrySpec spec() const {
    return {{{"source_sha256", sha256_hex(kSource)}, {"flags", "-O3"}},
            {"kernel.cpp", "kernel.so"},
            {{"kernel.cpp", sha256_hex(kSource)}}};
  }
  std::function<void(const std::string&)> builder() {
    return [this](const std::string& tmp) {
      ++builds_;
      std::ofstream(fs::path(tmp) / "kernel.cpp") << kSource;
      std::ofstream(fs::path(tmp) / "kernel.so") << "object code";
    };
  }
  // A valid entry, published; returns its directory.
  std::string publish(DiskCache& cache) {
    CacheStats stats;
    return cache.get(kKey, spec(), builder(), stats);
  }
  static void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  static json record(const std::string& dir) { return json::parse(read_text_file(dir + "/entry.json")); }
  static void set_record(const std::string& dir, const json& j) { write(dir + "/entry.json", j.dump()); }

  std::string root_;
  int builds_ = 0;
};

TEST_F(DiskCacheTest, BuildsOnceThenHits) {
  DiskCache cache(root_, "cpu");
  CacheStats stats;
  const std::string dir = cache.get(kKey, spec(), builder(), stats);
  EXPECT_EQ(cache.get(kKey, spec(), builder(), stats), dir);
  EXPECT_EQ(builds_, 1);
  EXPECT_EQ(stats.compiled, 1);
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(DiskCache::check_entry(dir, spec()), "");
  EXPECT_EQ(record(dir)["files"]["kernel.so"], sha256_hex("object code"));
}

TEST_F(DiskCacheTest, EntryChecksAreExact) {
  DiskCache cache(root_, "cpu");
  const std::string dir = publish(cache);
  const json good = record(dir);
  auto with = [&](auto edit) {
    json j = good;
    edit(j);
    set_record(dir, j);
    std::string why = DiskCache::check_entry(dir, spec());
    set_record(dir, good);
    return why;
  };
  EXPECT_EQ(with([](json& j) { j["files"] = json::object(); }), "entry.json does not list exactly the entry's files");
  EXPECT_EQ(with([](json& j) {
              j["files"] = json::array({"kernel.cpp", "kernel.so"});
            }),
            "entry.json's 'files' is not an object");
  EXPECT_EQ(with([](json& j) { j.erase("files"); }), "entry.json's 'files' is not an object");
  EXPECT_EQ(with([](json& j) { j["files"]["kernel.so"] = 7; }), "entry.json has no SHA-256 for 'kernel.so'");
  EXPECT_EQ(with([](json& j) {
              std::string d = j["files"]["kernel.so"];
              for (char& c : d) c = static_cast<char>(std::toupper(c));
              j["files"]["kernel.so"] = d;
            }),
            "entry.json has no SHA-256 for 'kernel.so'");
  EXPECT_EQ(with([](json& j) { j["files"]["other"] = std::string(64, '0'); }),
            "entry.json does not list exactly the entry's files");
  EXPECT_EQ(with([](json& j) { j["extra"] = 1; }), "entry.json has an unexpected field 'extra'");
  EXPECT_EQ(with([](json& j) { j["flags"] = "-O0"; }), "entry.json's 'flags' is not this build's");
  EXPECT_EQ(with([](json& j) { j.erase("flags"); }), "entry.json's 'flags' is not this build's");
  // The record claims another source (and a consistent digest for it).
  write(dir + "/kernel.cpp", "int other();\n");
  EXPECT_EQ(with([](json& j) { j["files"]["kernel.cpp"] = sha256_hex("int other();\n"); }),
            "'kernel.cpp' is not the source this key was derived from");
  write(dir + "/kernel.cpp", kSource);
  write(dir + "/entry.json", "[1, 2]");
  EXPECT_EQ(DiskCache::check_entry(dir, spec()), "entry.json is not an object");
  write(dir + "/entry.json", "{");
  EXPECT_EQ(DiskCache::check_entry(dir, spec()), "entry.json is not JSON");
  set_record(dir, good);
  ASSERT_EQ(DiskCache::check_entry(dir, spec()), "");
}

TEST_F(DiskCacheTest, EntryFilesAreExactAndRegular) {
  DiskCache cache(root_, "cpu");
  const std::string dir = publish(cache);
  write(dir + "/kernel.so", "planted");
  EXPECT_EQ(DiskCache::check_entry(dir, spec()), "'kernel.so' does not match its SHA-256");
  write(dir + "/kernel.so", "object code");
  write(dir + "/extra.so", "planted");
  EXPECT_EQ(DiskCache::check_entry(dir, spec()), "unexpected file 'extra.so'");
  fs::remove(dir + "/extra.so");
  fs::rename(dir + "/kernel.so", root_ + "/real.so");
  EXPECT_EQ(DiskCache::check_entry(dir, spec()), "'kernel.so' is missing");
  fs::create_symlink(root_ + "/real.so", dir + "/kernel.so");
  EXPECT_EQ(DiskCache::check_entry(dir, spec()), "'kernel.so' is not a regular file");
}

TEST_F(DiskCacheTest, InvalidEntryIsRebuiltNotUsed) {
  DiskCache cache(root_, "cpu");
  const std::string dir = publish(cache);
  write(dir + "/kernel.so", "planted");
  CacheStats stats;
  std::string seen;
  testing::internal::CaptureStderr();
  cache.get(kKey, spec(), builder(), stats,
            [&](const std::string& d, const json&) { seen = read_text_file(d + "/kernel.so"); });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(seen, "object code");
  EXPECT_EQ(stats.rebuilt, 1);
  EXPECT_NE(err.find("warning[E709]"), std::string::npos) << err;
  EXPECT_NE(err.find("'kernel.so' does not match its SHA-256"), std::string::npos) << err;
}

TEST_F(DiskCacheTest, ArtifactIsCheckedAsItLoads) {
  DiskCache cache(root_, "cpu");
  const std::string dir = publish(cache);
  const std::string digest = record(dir)["files"]["kernel.so"];
  EXPECT_EQ(verified_bytes(dir + "/kernel.so", digest), "object code");
  const FileIdentity id = verified_identity(dir + "/kernel.so", digest);
  EXPECT_TRUE(same_file(dir + "/kernel.so", id));
  EXPECT_THROW(verified_bytes(dir + "/kernel.so", std::string(64, '0')), ArtifactMismatch);
  EXPECT_THROW(verified_identity(dir + "/kernel.so", std::string(64, '0')), ArtifactMismatch);
  write(dir + "/other", "x");
  fs::rename(dir + "/other", dir + "/kernel.so");  // same name, another file
  EXPECT_FALSE(same_file(dir + "/kernel.so", id));
}

TEST_F(DiskCacheTest, MismatchAtLoadRebuildsAndAgainFails) {
  DiskCache cache(root_, "cpu");
  publish(cache);
  CacheStats stats;
  testing::internal::CaptureStderr();
  try {
    cache.get(kKey, spec(), builder(), stats,
              [](const std::string&, const json&) { throw ArtifactMismatch("kernel.so changed as it loaded"); });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E705");
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("(kernel.so changed as it loaded): not loaded; rebuilding it"), std::string::npos) << err;
  EXPECT_EQ(builds_, 2);
}

TEST_F(DiskCacheTest, BuildWritingOtherFilesIsRefused) {
  DiskCache cache(root_, "cpu");
  CacheStats stats;
  auto sloppy = [](const std::string& tmp) {
    std::ofstream(fs::path(tmp) / "kernel.cpp") << kSource;
    std::ofstream(fs::path(tmp) / "kernel.so") << "object code";
    std::ofstream(fs::path(tmp) / "stray.o") << "?";
  };
  try {
    cache.get(kKey, spec(), sloppy, stats);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E705");
  }
}

TEST_F(DiskCacheTest, RootIsPrivate) {
  ensure_private_dir(root_);
  struct stat st {};
  ASSERT_EQ(::stat(root_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  EXPECT_NO_THROW(ensure_private_dir(root_));  // 0744: readable is fine
  auto code_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return std::string("none");
  };
  fs::permissions(root_, fs::perms::all);
  EXPECT_EQ(code_of([&] { ensure_private_dir(root_); }), "E707");
  fs::permissions(root_, fs::perms::owner_all | fs::perms::group_all);
  EXPECT_EQ(code_of([&] { ensure_private_dir(root_); }), "E707");
  // In /tmp: exactly 0700, and not a symlink.
  fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read);
  EXPECT_EQ(code_of([&] { ensure_private_dir(root_, true); }), "E707");
  fs::permissions(root_, fs::perms::owner_all);
  EXPECT_NO_THROW(ensure_private_dir(root_, true));
  fs::create_symlink(root_, root_ + "-link");
  EXPECT_NO_THROW(ensure_private_dir(root_ + "-link"));
  EXPECT_EQ(code_of([&] { ensure_private_dir(root_ + "-link", true); }), "E707");
  fs::remove(root_ + "-link");
  write(root_ + "/file", "");
  EXPECT_EQ(code_of([&] { ensure_private_dir(root_ + "/file"); }), "E707");
  if (::geteuid() == 0) {  // only root can give a directory away
    ASSERT_EQ(::chown(root_.c_str(), 65534, 65534), 0);
    EXPECT_EQ(code_of([&] { ensure_private_dir(root_); }), "E707");
    ASSERT_EQ(::chown(root_.c_str(), 0, 0), 0);
  }
}

TEST(CacheRoot, FromTheEnvironmentNeverShared) {
  EXPECT_EQ(cache_root_for("/c", "/x", "/h", 7), "/c");
  EXPECT_EQ(cache_root_for("", "/x", "/h", 7), "/x/tessera");
  EXPECT_EQ(cache_root_for(nullptr, nullptr, "/h", 7), "/h/.cache/tessera");
  EXPECT_EQ(cache_root_for(nullptr, "", "", 1234), "/tmp/tessera-cache-1234");
  EXPECT_EQ(cache_root_for(nullptr, nullptr, nullptr, 0), "/tmp/tessera-cache-0");
}

TEST(CacheRoot, ByteCounts) {
  EXPECT_EQ(parse_byte_count("0"), 0u);
  EXPECT_EQ(parse_byte_count("1234"), 1234u);
  EXPECT_EQ(parse_byte_count("2K"), 2048u);
  EXPECT_EQ(parse_byte_count("3M"), 3u << 20);
  EXPECT_EQ(parse_byte_count("2G"), uint64_t{2} << 30);
  EXPECT_EQ(parse_byte_count("1T"), uint64_t{1} << 40);
  for (const char* bad : {"", "-1", "1.5G", "G", "12Q", " 1", "1 G", "99999999999999999999", "99999999999T"})
    EXPECT_THROW(parse_byte_count(bad), Error) << bad;
}

class CachePruneTest : public DiskCacheTest {
 protected:
  // An entry of `bytes` bytes last used `age_s` seconds ago.
  std::string entry(const std::string& ns, char key, size_t bytes, int age_s) {
    const fs::path dir = fs::path(root_) / ns / std::string(64, key);
    fs::create_directories(dir);
    write((dir / "blob").string(), std::string(bytes, 'x'));
    age(dir.string(), age_s);
    return dir.string();
  }
  static void age(const std::string& path, int age_s) {
    const auto t = fs::file_time_type::clock::now() - std::chrono::seconds(age_s);
    fs::last_write_time(path, t);
  }
};

TEST_F(CachePruneTest, EvictsLeastRecentlyUsedFirst) {
  const std::string a = entry("cpu", 'a', 1000, 300), b = entry("cpu-headers", 'b', 1000, 200),
                    c = entry("cpu", 'c', 1000, 100), d = entry("cuda", 'd', 1000, 0);
  CacheSummary s = scan_cache(root_);
  ASSERT_EQ(s.entries.size(), 4u);
  EXPECT_EQ(s.bytes, 4000u);
  EXPECT_EQ(s.entries.front().path, a);
  EXPECT_EQ(s.entries.back().path, d);
  touch_entry(a);  // used now: the newest
  PruneResult r = prune_cache(root_, 2500);
  EXPECT_EQ(r.evicted, 2);
  EXPECT_EQ(r.evicted_bytes, 2000u);
  EXPECT_TRUE(fs::exists(a));
  EXPECT_FALSE(fs::exists(b));
  EXPECT_FALSE(fs::exists(c));
  EXPECT_TRUE(fs::exists(d));
  EXPECT_TRUE(fs::is_empty(fs::path(root_) / "trash"));
  // Under the cap: nothing moves.
  EXPECT_EQ(prune_cache(root_, 2000).evicted, 0);
}

TEST_F(CachePruneTest, KeepsTheEntryJustPublished) {
  const std::string old = entry("cpu", 'a', 5000, 100), fresh = entry("cpu", 'b', 5000, 500);
  PruneResult r = prune_cache(root_, 1000, fresh);
  EXPECT_EQ(r.evicted, 1);
  EXPECT_FALSE(fs::exists(old));
  EXPECT_TRUE(fs::exists(fresh));  // over the cap alone, but kept
}

TEST_F(CachePruneTest, PublishingBoundsTheCache) {
  entry("cpu", 'b', 4000, 1000);
  entry("cpu", 'c', 4000, 500);
  DiskCache cache(root_, "cpu");
  cache.set_max_bytes(5000);
  const std::string dir = publish(cache);
  const CacheSummary s = scan_cache(root_);
  ASSERT_EQ(s.entries.size(), 2u);
  EXPECT_EQ(s.entries[0].key, std::string(64, 'c'));
  EXPECT_EQ(s.entries[1].path, dir);
}

TEST_F(CachePruneTest, PublishCountsWithoutScanningUntilOverTheCap) {
  const std::string b = entry("cpu", 'b', 4000, 1000), c = entry("cpu", 'c', 4000, 900);
  prune_cache(root_, 1 << 20);   // a full scan records 8000 bytes
  entry("cpu", 'd', 4000, 800);  // added behind the record's back: not counted yet
  DiskCache cache(root_, "cpu");
  cache.set_max_bytes(9000);
  CacheStats stats;
  cache.get(std::string(64, 'e'), spec(), builder(), stats);  // 8000 + this one <= 9000: no scan
  EXPECT_EQ(scan_cache(root_).entries.size(), 4u);
  cache.set_max_bytes(8500);
  const std::string f = cache.get(std::string(64, 'f'), spec(), builder(), stats);  // over: a full scan evicts
  const CacheSummary s = scan_cache(root_);
  EXPECT_LE(s.bytes, 8500u);
  EXPECT_FALSE(fs::exists(b));
  EXPECT_FALSE(fs::exists(c));
  EXPECT_TRUE(fs::exists(f));
}

TEST_F(CachePruneTest, ReclaimsTempsOfDeadProcessesOnly) {
  entry("cpu", 'a', 10, 0);
  const fs::path ns = fs::path(root_) / "cpu";
  const std::string dead = "999999999", live = std::to_string(getpid());
  for (const std::string& name : {"tmp-" + dead + "-1", "tmp-" + live + "-2", "trash-" + dead + "-3",
                                  "pre-" + dead + "-4", "tmp-" + dead + "-young"})
    fs::create_directories(ns / name);
  fs::create_directories(fs::path(root_) / "trash" / (dead + "-5"));
  for (const std::string& name :
       {"tmp-" + dead + "-1", "tmp-" + live + "-2", "trash-" + dead + "-3", "pre-" + dead + "-4"})
    age((ns / name).string(), 7200);
  age((fs::path(root_) / "trash" / (dead + "-5")).string(), 7200);
  EXPECT_EQ(scan_cache(root_).temp_dirs, 6);
  PruneResult r = prune_cache(root_, 1 << 20);
  EXPECT_EQ(r.reclaimed, 4);
  EXPECT_EQ(r.evicted, 0);
  EXPECT_TRUE(fs::exists(ns / ("tmp-" + live + "-2")));
  EXPECT_TRUE(fs::exists(ns / ("tmp-" + dead + "-young")));
  EXPECT_FALSE(fs::exists(ns / ("tmp-" + dead + "-1")));
  EXPECT_EQ(scan_cache(root_).temp_dirs, 2);
  // With no grace period (cache clear) the young one goes too; the live one stays.
  EXPECT_EQ(prune_cache(root_, 0, "", 0).reclaimed, 1);
  EXPECT_TRUE(fs::exists(ns / ("tmp-" + live + "-2")));
}

}  // namespace
}  // namespace tessera::runtime
