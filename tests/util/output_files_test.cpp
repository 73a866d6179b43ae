#include "core/util/output_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "core/util/file_io.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;

class OutputFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("shardscope_out_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  static void Put(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  static std::string Get(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  int Entries() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_)) n += static_cast<int>(!e.path().empty());
    return n;
  }
  fs::path dir_;
};

TEST_F(OutputFilesTest, AFailedWriteLeavesEveryEarlierFileAsItWas) {
  Put(P("a.csv"), "ORIGINAL");
  const Status s = WriteFilesAtomic({{P("a.csv"), "new a"}, {P("nodir/b.json"), "new b"}});
  EXPECT_EQ(s.code(), ErrorCode::kRuntime);
  EXPECT_NE(s.message().find("nodir/b.json: cannot write"), std::string::npos) << s.message();
  EXPECT_EQ(Get(P("a.csv")), "ORIGINAL");
  EXPECT_EQ(Entries(), 1);  // no temporary left behind
  ASSERT_TRUE(WriteFilesAtomic({{P("a.csv"), "new a"}, {P("b.json"), "new b"}}).ok());
  EXPECT_EQ(Get(P("a.csv")), "new a");
  EXPECT_EQ(Get(P("b.json")), "new b");
  EXPECT_EQ(Entries(), 2);
}

TEST_F(OutputFilesTest, ADeviceIsWrittenInPlaceNotReplaced) {
  ASSERT_TRUE(WriteFileAtomic("/dev/null", "discarded").ok());
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const Status full = WriteFileAtomic("/dev/full", std::string(1 << 16, 'x'));
  EXPECT_EQ(full.code(), ErrorCode::kRuntime);
  EXPECT_NE(full.message().find("/dev/full: write failed"), std::string::npos) << full.message();
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(OutputFilesTest, AFifoGetsTheDataAndStaysAFifo) {
  ASSERT_EQ(::mkfifo(P("pipe").c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = Get(P("pipe")); });
  const Status s = WriteFileAtomic(P("pipe"), "through the pipe");
  reader.join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(got, "through the pipe");
  struct stat st {};
  ASSERT_EQ(::stat(P("pipe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(OutputFilesTest, ASymlinkKeepsItsLinkAndItsTargetIsReplaced) {
  Put(P("real.json"), "old");
  fs::create_symlink(P("real.json"), P("link.json"));
  ASSERT_TRUE(WriteFileAtomic(P("link.json"), "new").ok());
  EXPECT_TRUE(fs::is_symlink(P("link.json")));
  EXPECT_EQ(Get(P("real.json")), "new");
  EXPECT_EQ(Entries(), 2);
}

// A dangling link names the file a write makes: the link is kept and its target created, and
// a target in a folder that does not exist is refused before the work (it was replaced by a
// regular file). Two outputs through one dangling link are one file.
TEST_F(OutputFilesTest, ADanglingSymlinkIsWrittenThroughOrRefused) {
  fs::create_symlink("made.json", P("link.json"));  // relative: the link's folder
  EXPECT_TRUE(CheckOutputPath("--out", P("link.json")).ok());
  ASSERT_TRUE(WriteFileAtomic(P("link.json"), "new").ok());
  EXPECT_TRUE(fs::is_symlink(P("link.json")));
  EXPECT_EQ(Get(P("made.json")), "new");
  EXPECT_EQ(Entries(), 2);

  fs::create_symlink(P("nodir/x.json"), P("nowhere.json"));
  const Status s = CheckOutputPath("--out", P("nowhere.json"));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.message().find("--out " + P("nowhere.json") + ": the folder '" + P("nodir") +
                             "' does not exist"),
            std::string::npos)
      << s.message();

  fs::create_symlink(P("later.json"), P("alias.json"));
  const Status twice =
      CheckDistinctFiles({{"--out", P("later.json")}, {"--json", P("alias.json")}}, {});
  EXPECT_EQ(twice.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(twice.message().find("the same file as --out"), std::string::npos) << twice.message();
}

TEST_F(OutputFilesTest, OutputPathsAreCheckedBeforeTheWork) {
  EXPECT_TRUE(CheckOutputPath("--csv", P("new.csv")).ok());
  EXPECT_TRUE(CheckOutputPath("--json", "/dev/null").ok());
  const Status empty = CheckOutputPath("--csv", "");
  EXPECT_EQ(empty.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(empty.message(), "--csv: empty path (expected a file name)");
  const Status folder = CheckOutputPath("--json", P("nodir/x.json"));
  EXPECT_EQ(folder.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(folder.message().find("--json " + P("nodir/x.json") + ": the folder '" + P("nodir") +
                                  "' does not exist"),
            std::string::npos)
      << folder.message();
  const Status directory = CheckOutputPath("--out", dir_.string());
  EXPECT_EQ(directory.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(directory.message().find("is a directory"), std::string::npos);
  Put(P("file"), "x");
  const Status not_folder = CheckOutputPath("--csv", P("file/x.csv"));
  EXPECT_EQ(not_folder.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(not_folder.message().find("is not a folder"), std::string::npos);
  // The check leaves nothing behind in the folder.
  EXPECT_EQ(Entries(), 1);
}

// `--summary /dev/stdout > out.txt`: the descriptor's file is written where it points, after
// what was printed, not replaced by a rename (the text output was lost).
TEST_F(OutputFilesTest, ADescriptorPathIsWrittenInPlaceAfterWhatItHolds) {
  const std::string file = P("out.txt");
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("text output\n", f);
  std::fflush(f);
  const std::string fd_path = "/proc/self/fd/" + std::to_string(fileno(f));
  if (!fs::exists(fd_path)) {
    std::fclose(f);
    GTEST_SKIP() << "no /proc/self/fd here";
  }
  EXPECT_TRUE(CheckOutputPath("--summary", fd_path).ok());
  ASSERT_TRUE(WriteFileAtomic(fd_path, "{\"summary\": 1}\n").ok());
  std::fclose(f);
  EXPECT_EQ(Get(file), "text output\n{\"summary\": 1}\n");
  EXPECT_EQ(Entries(), 1);  // no temporary left, the file not replaced
}

// A symlink is written through to its target: the target's folder must take the file.
TEST_F(OutputFilesTest, ASymlinkIntoAFolderThatRefusesFilesIsRefusedBeforeTheWork) {
  if (!fs::exists("/proc/version")) GTEST_SKIP() << "no /proc here";
  fs::create_symlink("/proc/version", P("link.json"));
  const Status s = CheckOutputPath("--summary", P("link.json"));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.message().find("the folder '/proc' is not writable"), std::string::npos)
      << s.message();
}

// A folder that refuses new files even to root, whom access(2) answers yes (sysfs): the
// command stopped after its work with exit 3 before.
TEST_F(OutputFilesTest, AFolderThatRefusesNewFilesIsRefusedBeforeTheWork) {
  if (!fs::is_directory("/sys/kernel")) GTEST_SKIP() << "no sysfs here";
  const Status sys = CheckOutputPath("--summary", "/sys/kernel/x.json");
  EXPECT_EQ(sys.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(sys.message().find("--summary /sys/kernel/x.json: the folder '/sys/kernel' is not "
                               "writable"),
            std::string::npos)
      << sys.message();
}

TEST_F(OutputFilesTest, OutputsMayNotOverwriteEachOtherOrAnInput) {
  Put(P("scenario.json"), "{}");
  fs::create_symlink(P("scenario.json"), P("alias.json"));
  const std::vector<NamedPath> inputs = {{"scenario", P("scenario.json")}};
  EXPECT_TRUE(CheckDistinctFiles({{"--csv", P("a.csv")}, {"--json", P("a.json")}}, inputs).ok());
  const Status twice = CheckDistinctFiles(
      {{"--csv", P("same.out")}, {"--json", (dir_ / "." / "same.out").string()}}, inputs);
  EXPECT_EQ(twice.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(twice.message().find("the same file as --csv"), std::string::npos) << twice.message();
  const Status input = CheckDistinctFiles({{"--json", P("alias.json")}}, inputs);
  EXPECT_EQ(input.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(input.message().find("is the scenario " + P("scenario.json")), std::string::npos)
      << input.message();
  // Devices keep nothing: both outputs may go there; options not given are skipped.
  EXPECT_TRUE(
      CheckDistinctFiles({{"--csv", "/dev/null"}, {"--json", "/dev/null"}, {"--x", ""}}, inputs)
          .ok());
}

TEST_F(OutputFilesTest, AnInputNamedTwiceIsRefused) {
  Put(P("a.json"), "{}");
  Put(P("b.json"), "{}");
  fs::create_symlink(P("a.json"), P("link.json"));
  EXPECT_TRUE(CheckDistinctInputs({{"input 1", P("a.json")}, {"input 2", P("b.json")}}).ok());
  const Status twice = CheckDistinctInputs(
      {{"input 1", P("a.json")}, {"input 2", P("b.json")}, {"input 3", P("link.json")}});
  EXPECT_EQ(twice.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(twice.message(), "input 3 " + P("link.json") + ": the same file as input 1 " +
                                 P("a.json") + " (it would be read twice)");
  // Devices are streams, not files: each read is its own. Empty paths are options not given.
  EXPECT_TRUE(
      CheckDistinctInputs({{"a", "/dev/null"}, {"b", "/dev/null"}, {"c", ""}, {"d", ""}}).ok());
}

}  // namespace
}  // namespace shardscope
