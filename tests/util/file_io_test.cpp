#include "core/util/file_io.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/util/output_files.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;

fs::path TempDir() {
  fs::path dir = fs::temp_directory_path() / ("shardscope_io_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

TEST(FileIoTest, AtomicWriteReplacesAndLeavesNoTemporary) {
  fs::path dir = TempDir();
  fs::path p = dir / "out.json";
  ASSERT_TRUE(WriteFileAtomic(p.string(), "first").ok());
  ASSERT_TRUE(WriteFileAtomic(p.string(), "second").ok());
  auto read = ReadFile(p.string());
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "second");
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}

TEST(FileIoTest, WriteIntoMissingFolderFailsAndKeepsNothing) {
  Status s = WriteFileAtomic("/nonexistent-dir-shardscope/x.json", "data");
  EXPECT_EQ(s.code(), ErrorCode::kRuntime);
  EXPECT_EQ(s.message().rfind("/nonexistent-dir-shardscope/x.json: cannot write (", 0), 0)
      << s.message();
  // The temporary file is an implementation detail the user never named.
  EXPECT_EQ(s.message().find(".tmp."), std::string::npos) << s.message();
}

TEST(FileIoTest, GzipInflatingPastTheLimitIsRefused) {
  fs::path dir = TempDir();
  const std::string p = (dir / "bomb.json.gz").string();
  ASSERT_TRUE(WriteFileAtomic(p, std::string(1 << 20, ' ')).ok());
  EXPECT_TRUE(ReadFile(p, size_t{1} << 20).ok());
  auto r = ReadFile(p, size_t{1} << 19);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(r.status().message(),
            p + ": inflates to more than 524288 bytes, the limit on any input (set "
                "SHARDSCOPE_MAX_INPUT_BYTES to raise it)");
  fs::remove_all(dir);
}

TEST(FileIoTest, DirectoryAsInputSaysSo) {
  fs::path dir = TempDir();
  auto r = ReadFile(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(r.status().message(), dir.string() + ": is a directory (expected a file)");
  fs::remove_all(dir);
}

// A JSON string's \u0000 reaches a path as a NUL byte, where the system would stop reading it.
TEST(FileIoTest, APathWithANulIsRefusedNotCutShort) {
  fs::path dir = TempDir();
  const std::string real = (dir / "job.json").string();
  ASSERT_TRUE(WriteFileAtomic(real, "{}").ok());
  auto r = ReadFile(real + std::string(1, '\0') + "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(r.status().message(),
            real + "\\0x: a file name with a NUL byte in it (expected a path without one)");
  fs::remove_all(dir);
}

TEST(FileIoTest, MissingFileIsInvalidInputNamingPath) {
  auto r = ReadFile("/no/such/file.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("/no/such/file.json"), std::string::npos);
}

TEST(FileIoTest, GzNamesAreWrittenAsGzip) {
  fs::path dir = TempDir();
  const fs::path p = dir / "t.json.gz";
  std::string text = "{\"traceEvents\": []}\n";
  for (int i = 0; i < 2000; ++i) text += "padding that compresses well ";
  ASSERT_TRUE(WriteFileAtomic(p.string(), text).ok());
  std::ifstream in(p, std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(raw.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(raw[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(raw[1]), 0x8b);
  EXPECT_LT(raw.size(), text.size() / 10);
  auto back = ReadFile(p.string());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, text);
  // Empty contents are still a valid gzip stream; other names stay plain.
  ASSERT_TRUE(WriteFileAtomic((dir / "e.gz").string(), "").ok());
  auto empty = ReadFile((dir / "e.gz").string());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "");
  ASSERT_TRUE(WriteFileAtomic((dir / "plain.json").string(), "{}").ok());
  EXPECT_EQ(fs::file_size(dir / "plain.json"), 2u);
  fs::remove_all(dir);
}

TEST(FileIoTest, ReadsGzip) {
  fs::path dir = TempDir();
  fs::path p = dir / "t.json.gz";
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzputs(f, "{\"a\": 1}");
  gzclose(f);
  auto r = ReadFile(p.string());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "{\"a\": 1}");
  fs::remove_all(dir);
}

// A `.gz` name promises gzip: plain text under it (zlib would read it through as it is), an
// empty file or a stream cut short is refused with the path, not read as something else.
TEST(FileIoTest, AGzNameThatIsNotGzipIsRefused) {
  fs::path dir = TempDir();
  std::ofstream(dir / "plain.json.gz") << "{\"a\": 1}";
  auto plain = ReadFile((dir / "plain.json.gz").string());
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(plain.status().message().find("plain.json.gz: not gzip data"), std::string::npos)
      << plain.status().message();

  std::ofstream(dir / "empty.gz").flush();
  auto empty = ReadFile((dir / "empty.gz").string());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty.gz: not gzip data"), std::string::npos)
      << empty.status().message();

  ASSERT_TRUE(WriteFileAtomic((dir / "cut.json.gz").string(), std::string(4096, 'x')).ok());
  std::string raw;
  {
    std::ifstream in(dir / "cut.json.gz", std::ios::binary);
    raw.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(dir / "cut.json.gz", std::ios::binary | std::ios::trunc)
      << raw.substr(0, raw.size() / 2);
  auto cut = ReadFile((dir / "cut.json.gz").string());
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("cut.json.gz: not a valid gzip file"), std::string::npos)
      << cut.status().message();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shardscope
