// TestTempDir: a fresh directory for one test, removed with everything in it when the object
// goes, so a test run leaves nothing behind in /tmp. For tests only.
//
//   base::TestTempDir dir("auto_spec");
//   auto db = DB::Open(dir.path(), Options{});  // dir must outlive db
//
// The directory is made under $TEST_TMPDIR, else $TMPDIR, else /tmp (where gtest's TempDir()
// looks). SHOAL_KEEP_TEST_DIRS=1 keeps it, for a look after a failure.
#ifndef SHOAL_BASE_TEST_TEMP_DIR_H_
#define SHOAL_BASE_TEST_TEMP_DIR_H_

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace shoal::base {

class TestTempDir {
 public:
  explicit TestTempDir(const std::string& name) {
    std::string root = "/tmp";
    for (const char* var : {"TEST_TMPDIR", "TMPDIR"}) {
      const char* value = std::getenv(var);
      if (value != nullptr && value[0] != '\0') {
        root = value;
        break;
      }
    }
    path_ = root + "/" + name + "_XXXXXX";
    if (mkdtemp(path_.data()) == nullptr) throw std::runtime_error("mkdtemp " + path_);
  }
  ~TestTempDir() {
    const char* keep = std::getenv("SHOAL_KEEP_TEST_DIRS");
    if (keep != nullptr && std::string(keep) == "1") return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TestTempDir(const TestTempDir&) = delete;
  TestTempDir& operator=(const TestTempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace shoal::base

#endif  // SHOAL_BASE_TEST_TEMP_DIR_H_
