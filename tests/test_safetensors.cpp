// safetensors I/O, atomic writes and ParamStore checkpoints.
//
// Interop is checked both ways against independent Python code that uses only struct + json:
// tests/golden/make_safetensors_fixture.py wrote tests/golden/fixture.safetensors (read here), and
// tests/golden/read_safetensors.py reads a file written here.
#include <doctest/doctest.h>

#include "skip.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "base/atomic_file.h"
#include "base/checksum.h"
#include "engine/io/safetensors.h"
#include "engine/params.h"

using namespace pillars;
namespace fs = std::filesystem;

namespace {

const std::string kGolden = std::string(PILLARS_SOURCE_DIR) + "/tests/golden";

// A fresh directory under the system temp directory, removed with everything in it at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path =
        fs::temp_directory_path() / ("pillars_safetensors_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string u64le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A safetensors file from a header text and a data buffer, as bytes (no padding).
std::string st_file(const std::string& header, const std::string& data = "") {
  return u64le(header.size()) + header + data;
}

// Files in `dir` that look like AtomicFile temporaries.
int temp_files_in(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) ++n;
  return n;
}

uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }

Tensor f32(const Shape& shape, const std::vector<float>& v) { return Tensor::from(shape, v); }

Tensor bf16(const Shape& shape, const std::vector<uint16_t>& raw) {
  Tensor t = Tensor::empty(shape, DType::bf16);
  std::copy(raw.begin(), raw.end(), t.data<uint16_t>());
  return t;
}

Tensor i64(const Shape& shape, const std::vector<int64_t>& v) {
  Tensor t = Tensor::empty(shape, DType::i64);
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

// Same shape, dtype and bytes.
bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

// Loads `path`, expecting an InputError whose message starts with the path and contains `keyword`.
void check_load_fails(const std::string& path, const std::string& keyword) {
  INFO("expected keyword: ", keyword);
  CHECK_THROWS_AS(io::load_safetensors(path), InputError);
  try {
    io::load_safetensors(path);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    INFO("message: ", msg);
    CHECK(msg.rfind(path + ": ", 0) == 0);
    CHECK(msg.find(keyword) != std::string::npos);
  }
}

// A small set of tensors covering every dtype, a scalar and empty tensors.
std::vector<io::NamedTensor> sample_tensors() {
  return {
      {"encoder.weight", f32({2, 3}, {1.0f, -2.5f, 0.1f, 3.0e38f, -0.0f, 1.0e-30f})},
      {"alpha.bf16", bf16({2, 2}, {0x3F80, 0xC020, 0x0000, 0x4049})},
      {"ids", Tensor::from_i32({4}, {0, -1, 2147483647, -2147483647 - 1})},
      {"counts", i64({3}, {int64_t(1) << 40, -(int64_t(1) << 62), INT64_MIN})},
      {"step", i64({}, {123456789012345})},
      {"scalar", f32({}, {42.0f})},
      {"empty_rows", Tensor::zeros({0, 4})},
      {"empty_bf16", Tensor::zeros({3, 0}, DType::bf16)},
  };
}

} // namespace

// ---- round trips ----------------------------------------------------------------------------

TEST_CASE("safetensors: round trip of every dtype, scalars, empty tensors and metadata") {
  TempDir dir;
  const std::string path = dir.file("all.safetensors");
  const auto tensors = sample_tensors();
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"step", "17"}, {"note", "ünïcode ✓"}};
  io::save_safetensors(path, tensors, meta);

  const io::SafetensorsContents back = io::load_safetensors(path);
  CHECK(back.metadata == meta);
  REQUIRE(back.tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) { // written in the given order, so read in it too
    INFO("tensor ", tensors[i].name);
    CHECK(back.tensors[i].name == tensors[i].name);
    CHECK(same_tensor(back.tensors[i].tensor, tensors[i].tensor));
    CHECK(back.tensors[i].tensor.storage() != tensors[i].tensor.storage()); // owns its memory
  }
  CHECK(back.tensors[4].tensor.rank() == 0);
  CHECK(back.tensors[4].tensor.data<int64_t>()[0] == 123456789012345);
  CHECK(temp_files_in(dir.path) == 0);
}

TEST_CASE("safetensors: no metadata and no tensors round trip too") {
  TempDir dir;
  const std::string path = dir.file("empty.safetensors");
  io::save_safetensors(path, {});
  const auto back = io::load_safetensors(path);
  CHECK(back.tensors.empty());
  CHECK(back.metadata.empty()); // the checksum is verified and left out
  const std::string bytes = read_bytes(path);
  const auto header = nlohmann::json::parse(bytes.substr(8));
  // The checksum of nothing but the tensor count (0): engine/io/safetensors.h's stream.
  CHECK(header == nlohmann::json::parse(R"({"__metadata__":{"pillars.checksum":"mix64v2:d56b1fbb9ceba9e8"}})"));
}

TEST_CASE("safetensors: the writer pads the header and lays tensors out in the given order") {
  TempDir dir;
  const std::string path = dir.file("layout.safetensors");
  io::save_safetensors(path, {{"b", f32({3}, {1, 2, 3})}, {"a", Tensor::from_i32({1}, {7})}}, {{"k", "v"}});
  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() >= 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  CHECK((8 + n) % 8 == 0);
  REQUIRE(bytes.size() == 8 + n + 16);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  CHECK(header["__metadata__"]["k"] == "v");
  CHECK(header["__metadata__"]["pillars.checksum"].get<std::string>().rfind("mix64v2:", 0) == 0);
  CHECK(header["b"] == nlohmann::json::parse(R"({"dtype":"F32","shape":[3],"data_offsets":[0,12]})"));
  CHECK(header["a"] == nlohmann::json::parse(R"({"dtype":"I32","shape":[1],"data_offsets":[12,16]})"));
  float b1;
  std::memcpy(&b1, bytes.data() + 8 + n + 4, 4);
  CHECK(b1 == 2.0f);
}

TEST_CASE("safetensors: views (slices) are saved as their own elements") {
  TempDir dir;
  const std::string path = dir.file("view.safetensors");
  Tensor base = f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  io::save_safetensors(path, {{"rows", base.slice0(1, 3)}});
  const auto back = io::load_safetensors(path);
  REQUIRE(back.tensors.size() == 1);
  CHECK(back.tensors[0].tensor.shape() == Shape{2, 2});
  CHECK(back.tensors[0].tensor.to_vector() == std::vector<float>{2, 3, 4, 5});
}

// ---- interop ----------------------------------------------------------------------------------

TEST_CASE("safetensors: reads the Python-written fixture") {
  // Keep in sync with tests/golden/make_safetensors_fixture.py.
  const std::string path = kGolden + "/fixture.safetensors";
  REQUIRE(fs::exists(path));
  const io::SafetensorsContents c = io::load_safetensors(path);
  CHECK(c.metadata ==
        std::map<std::string, std::string>{{"format", "pt"}, {"producer", "make_safetensors_fixture.py"}});

  // In file offset order, which is neither alphabetical nor the header's order.
  REQUIRE(c.tensors.size() == 6);
  const std::vector<std::string> names = {"zeta.weight", "alpha.bf16", "mid.ids", "beta.counts", "scalar", "empty"};
  for (size_t i = 0; i < names.size(); ++i) CHECK(c.tensors[i].name == names[i]);

  const Tensor& zeta = c.tensors[0].tensor;
  REQUIRE(zeta.dtype() == DType::f32);
  CHECK(zeta.shape() == Shape{2, 3});
  const std::vector<float> want_f32 = {1.0f, -2.5f, 0.1f, 3.0e38f, -0.0f, 1.0e-30f};
  for (int i = 0; i < 6; ++i) CHECK(bits(zeta.data<float>()[i]) == bits(want_f32[i])); // exact, incl. -0.0

  const Tensor& alpha = c.tensors[1].tensor;
  REQUIRE(alpha.dtype() == DType::bf16);
  CHECK(alpha.shape() == Shape{5});
  const std::vector<uint16_t> want_bf16 = {0x3F80, 0xC020, 0x0000, 0x4049, 0x7F80};
  for (int i = 0; i < 5; ++i) CHECK(alpha.data<uint16_t>()[i] == want_bf16[i]);
  const std::vector<float> alpha_f = alpha.to_vector();
  CHECK(alpha_f[0] == 1.0f);
  CHECK(alpha_f[1] == -2.5f);
  CHECK(alpha_f[3] == 3.140625f);
  CHECK(std::isinf(alpha_f[4]));

  const Tensor& mid = c.tensors[2].tensor;
  REQUIRE(mid.dtype() == DType::i32);
  CHECK(mid.shape() == Shape{4});
  const std::vector<int32_t> want_i32 = {0, -1, 2147483647, -2147483647 - 1};
  for (int i = 0; i < 4; ++i) CHECK(mid.data<int32_t>()[i] == want_i32[i]);

  const Tensor& beta = c.tensors[3].tensor;
  REQUIRE(beta.dtype() == DType::i64);
  CHECK(beta.shape() == Shape{3, 2});
  const std::vector<int64_t> want_i64 = {1, -1, (int64_t(1) << 40) + 3, -(int64_t(1) << 62), INT64_MAX, INT64_MIN};
  for (int i = 0; i < 6; ++i) CHECK(beta.data<int64_t>()[i] == want_i64[i]);

  const Tensor& scalar = c.tensors[4].tensor;
  CHECK(scalar.rank() == 0);
  CHECK(scalar.numel() == 1);
  CHECK(scalar.data<float>()[0] == 42.0f);

  const Tensor& empty = c.tensors[5].tensor;
  CHECK(empty.shape() == Shape{0, 4});
  CHECK(empty.numel() == 0);
  CHECK(empty.dtype() == DType::f32);
}

TEST_CASE("safetensors: a C++-written file reads back in the independent Python reader") {
  const std::string python = "/usr/bin/python3";
  if (!fs::exists(python)) {
    SKIP_TEST(python, " not found, so the Python reader check cannot run");
    return;
  }
  TempDir dir;
  const std::string path = dir.file("for python.safetensors"); // a space, to test quoting
  const auto tensors = sample_tensors();
  io::save_safetensors(path, tensors, {{"format", "pt"}, {"producer", "pillars"}});

  const std::string cmd = python + " '" + kGolden + "/read_safetensors.py' '" + path + "'";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe);
  INFO("command: ", cmd);
  INFO("output: ", out);
  REQUIRE(status == 0);
  const auto j = nlohmann::json::parse(out);

  CHECK(j["data_start"].get<uint64_t>() % 8 == 0);
  // Python recomputes the checksum (an independent implementation of base/checksum.h and of the
  // stream it covers: metadata, tensor descriptions, data).
  CHECK(j["metadata"]["format"] == "pt");
  CHECK(j["metadata"]["producer"] == "pillars");
  CHECK(j["metadata"]["pillars.checksum"] == j["checksum"]);
  const auto& jt = j["tensors"];
  REQUIRE(jt.size() == tensors.size());
  const char* dtypes[] = {"F32", "BF16", "I32", "I64", "I64", "F32", "F32", "BF16"};
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i].tensor;
    INFO("tensor ", tensors[i].name);
    CHECK(jt[i]["name"] == tensors[i].name);
    CHECK(jt[i]["dtype"] == dtypes[i]);
    CHECK(jt[i]["shape"].get<Shape>() == t.shape());
    const auto& values = jt[i]["values"];
    REQUIRE(values.size() == static_cast<size_t>(t.numel()));
    for (int64_t k = 0; k < t.numel(); ++k) {
      switch (t.dtype()) {
        case DType::f32:
          CHECK(bits(static_cast<float>(values[k].get<double>())) == bits(t.data<float>()[k]));
          break;
        case DType::bf16:
          CHECK(jt[i]["bits"][k].get<uint16_t>() == t.data<uint16_t>()[k]);
          break;
        case DType::i32:
          CHECK(values[k].get<int32_t>() == t.data<int32_t>()[k]);
          break;
        case DType::i64:
          CHECK(values[k].get<int64_t>() == t.data<int64_t>()[k]);
          break;
      }
    }
  }
  CHECK(jt[1]["values"][1].get<double>() == -2.5); // bf16 0xC020
}

// ---- corrupt files ------------------------------------------------------------------------------

TEST_CASE("safetensors: missing, unreadable and too-short files are rejected with the path") {
  TempDir dir;
  check_load_fails(dir.file("nope.safetensors"), "No such file");
  check_load_fails(dir.path.string(), "not a regular file");
  const std::string tiny = dir.file("tiny.safetensors");
  write_bytes(tiny, std::string("\x10\0\0\0\0", 5));
  check_load_fails(tiny, "too short");
  write_bytes(tiny, "");
  check_load_fails(tiny, "too short");
}

TEST_CASE("safetensors: corrupt headers and layouts are rejected with the path and the reason") {
  struct Case {
    const char* what;
    std::string bytes;
    std::string keyword;
  };
  const std::string f4(4, '\x01'), f8(8, '\x01'), f12(12, '\x01');
  const std::string deep = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
  const std::vector<Case> cases = {
      {"header length beyond the file", u64le(1000) + "{}", "runs past the end of the file"},
      {"header length over 100 MB", u64le(200'000'000) + "{}", "exceeds the limit"},
      {"header length 2^64-1", u64le(~uint64_t(0)) + "{}", "exceeds the limit"},
      {"empty header", st_file(""), "not valid JSON"},
      {"bad JSON", st_file(R"({"w": )"), "not valid JSON"},
      {"invalid UTF-8", st_file("{\"\xff\": 1}"), "not valid JSON"},
      {"header is an array", st_file("[1, 2]"), "not a JSON object"},
      {"nested too deeply", st_file(deep), "nested more than"},
      {"entry not an object", st_file(R"({"w": 5})"), "entry must be a JSON object"},
      {"missing dtype", st_file(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", f4), "missing \"dtype\""},
      {"missing shape", st_file(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", f4), "missing \"shape\""},
      {"missing data_offsets", st_file(R"({"w": {"dtype": "F32", "shape": [1]}})", f4), "missing \"data_offsets\""},
      {"dtype not a string", st_file(R"({"w": {"dtype": 7, "shape": [1], "data_offsets": [0, 4]}})", f4),
       "\"dtype\" must be a string"},
      {"unknown dtype", st_file(R"({"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}})", f4),
       "unsupported dtype \"F16\""},
      {"shape not an array", st_file(R"({"w": {"dtype": "F32", "shape": 1, "data_offsets": [0, 4]}})", f4),
       "\"shape\" must be an array"},
      {"negative extent", st_file(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", f4),
       "extent -1 is negative"},
      {"non-integer extent", st_file(R"({"w": {"dtype": "F32", "shape": [1.0], "data_offsets": [0, 4]}})", f4),
       "extent 1.0 is not an integer"},
      {"string extent", st_file(R"({"w": {"dtype": "F32", "shape": ["1"], "data_offsets": [0, 4]}})", f4),
       "is not an integer"},
      {"huge shape",
       st_file(R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 4]}})", f4),
       "too large"},
      {"offsets not a pair", st_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", f4),
       "must be [begin, end]"},
      {"offsets not integers", st_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": ["0", 4]}})", f4),
       "must be [begin, end]"},
      {"negative offset", st_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", f4),
       "must be [begin, end]"},
      {"begin after end", st_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", f4),
       "begin is after end"},
      {"end beyond the buffer", st_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", f4),
       "run past the end of the data"},
      {"byte size mismatch", st_file(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", f8),
       "byte size mismatch"},
      {"overlapping tensors",
       st_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
               f12),
       "overlap"},
      {"empty tensor inside another",
       st_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}})",
               f8),
       "overlap"},
      {"hole between tensors",
       st_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                   "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
               f12),
       "gap"},
      {"hole at the start", st_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", f8), "gap"},
      {"trailing bytes", st_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", f8),
       "trailing bytes"},
      {"duplicate tensor names",
       st_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                   "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
               f8),
       "duplicate tensor name \"w\""},
      {"duplicate field",
       st_file(R"({"w": {"dtype": "F32", "dtype": "I32", "shape": [1], "data_offsets": [0, 4]}})", f4),
       "duplicate key \"dtype\""},
      {"metadata not an object", st_file(R"({"__metadata__": ["a"]})"), "must be a JSON object"},
      {"metadata value not a string", st_file(R"({"__metadata__": {"step": 5}})"),
       "metadata value for key \"step\" is not a string"},
  };
  TempDir dir;
  const std::string path = dir.file("corrupt.safetensors");
  for (const Case& c : cases) {
    INFO("case: ", c.what);
    write_bytes(path, c.bytes);
    check_load_fails(path, c.keyword);
  }
}

TEST_CASE("safetensors: valid files the writer would not produce are accepted") {
  TempDir dir;
  const std::string path = dir.file("odd.safetensors");
  // An unpadded header, unaligned offsets, extra whitespace, and empty tensors sharing an offset.
  float two = 2.0f;
  std::string data(2, '\x80');
  data.append(reinterpret_cast<const char*>(&two), 4);
  write_bytes(path, st_file(R"({ "e1": {"dtype": "I64", "shape": [0, 3], "data_offsets": [2, 2]},
                                 "x": {"dtype": "F32", "shape": [], "data_offsets": [2, 6]},
                                 "e0": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},
                                 "d0": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},
                                 "h": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]} }  )",
                            data));
  const auto c = io::load_safetensors(path);
  REQUIRE(c.tensors.size() == 5);
  CHECK(c.tensors[0].name == "e0"); // ties at one offset keep the header's order
  CHECK(c.tensors[1].name == "d0");
  CHECK(c.tensors[2].name == "h");
  CHECK(c.tensors[3].name == "e1");
  CHECK(c.tensors[4].name == "x");
  CHECK(c.tensors[2].tensor.data<uint16_t>()[0] == 0x8080);
  CHECK(c.tensors[3].tensor.shape() == Shape{0, 3});
  CHECK(c.tensors[4].tensor.data<float>()[0] == 2.0f);
}

TEST_CASE(
    "safetensors: the checksum covers the metadata and the tensor names, and older data-only checksums still check") {
  TempDir dir;
  const std::string path = dir.file("ck.safetensors");
  io::save_safetensors(path, {{"w", f32({2}, {1, 2})}}, {{"pillars.state", "{\"updates\":5}"}});
  CHECK(io::load_safetensors(path).checksum == io::ChecksumCoverage::complete);
  const std::string good = read_bytes(path);
  // The same header length, one metadata character changed, the checksum kept: refused.
  std::string edited = good;
  edited.replace(edited.find("\\\"updates\\\":5"), 13, "\\\"updates\\\":7");
  REQUIRE(edited != good);
  write_bytes(path, edited);
  check_load_fails(path, "pillars.checksum");
  // A tensor renamed (same length), the checksum kept: refused too.
  std::string renamed = good;
  renamed.replace(renamed.find("\"w\":"), 4, "\"v\":");
  write_bytes(path, renamed);
  check_load_fails(path, "pillars.checksum");
  // A file of the older kind ("mix64:", the data alone) loads, and says what was checked.
  float data[2] = {1, 2};
  Checksum64 c;
  c.add(data, sizeof data);
  const std::string old_header = str_cat(R"({"__metadata__":{"pillars.checksum":")", c.hex(),
                                         R"("},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})");
  write_bytes(path, st_file(old_header, std::string(reinterpret_cast<const char*>(data), sizeof data)));
  CHECK(io::load_safetensors(path).checksum == io::ChecksumCoverage::data);
  // No checksum: loaded unchecked, and said so.
  write_bytes(path, st_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                            std::string(reinterpret_cast<const char*>(data), sizeof data)));
  CHECK(io::load_safetensors(path).checksum == io::ChecksumCoverage::none);
  // A checksum of neither kind.
  write_bytes(
      path,
      st_file(R"({"__metadata__":{"pillars.checksum":"sha1:00"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
              std::string(reinterpret_cast<const char*>(data), sizeof data)));
  check_load_fails(path, "mix64v2:");
}

// ---- atomic writes ------------------------------------------------------------------------------

TEST_CASE("safetensors: atomic_write_file replaces a file and leaves no temporary") {
  TempDir dir;
  const std::string path = dir.file("meta.json");
  io::atomic_write_file(path, "{\"a\": 1}");
  CHECK(read_bytes(path) == "{\"a\": 1}");
  io::atomic_write_file(path, "second");
  CHECK(read_bytes(path) == "second");
  const std::string prefix = path + ".tmp." + std::to_string(::getpid()) + ".";
  const std::string t1 = io::atomic_temp_path(path), t2 = io::atomic_temp_path(path);
  CHECK(t1.rfind(prefix, 0) == 0);
  CHECK(t1 != t2); // one per writer
  CHECK(temp_files_in(dir.path) == 0);
}

TEST_CASE("safetensors: a failed save leaves the previous file untouched and no temporary file") {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  io::save_safetensors(path, {{"w", f32({2}, {1, 2})}});
  const std::string good = read_bytes(path);

  SUBCASE("abandoned midway (an exception while writing)") {
    try {
      io::AtomicFile f(path);
      f.write("partial garbage");
      CHECK(fs::exists(f.temp_path()));
      CHECK(read_bytes(path) == good); // not visible before commit
      throw std::runtime_error("simulated failure");
    } catch (const std::runtime_error&) {}
  }
  SUBCASE("a write error midway (file size limit)") {
    // Make write(2) fail with EFBIG once the temporary file passes 1 KiB; SIGXFSZ is ignored so
    // the process is not killed. Restored right after.
    rlimit old{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    rlimit small = old;
    small.rlim_cur = 1024;
    auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    bool threw = false;
    std::string msg;
    try {
      io::save_safetensors(path, {{"w", Tensor::zeros({4096})}});
    } catch (const Error& e) {
      threw = true;
      msg = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::signal(SIGXFSZ, old_handler);
    CHECK(threw);
    CHECK(msg.rfind(path, 0) == 0);
    CHECK(msg.find("write") != std::string::npos);
  }
  SUBCASE("an undefined tensor") {
    CHECK_THROWS_AS(io::save_safetensors(path, {{"w", f32({1}, {5})}, {"bad", Tensor()}}), Error);
  }
  SUBCASE("invalid names") {
    CHECK_THROWS_AS(io::save_safetensors(path, {{"w", f32({1}, {5})}, {"w", f32({1}, {6})}}), Error);
    CHECK_THROWS_AS(io::save_safetensors(path, {{"__metadata__", f32({1}, {5})}}), Error);
    CHECK_THROWS_AS(io::save_safetensors(path, {{"", f32({1}, {5})}}), Error);
    CHECK_THROWS_AS(io::save_safetensors(path, {{"bad \xff utf8", f32({1}, {5})}}), Error);
  }
  CHECK(read_bytes(path) == good);
  CHECK(temp_files_in(dir.path) == 0);
  CHECK(io::load_safetensors(path).tensors.at(0).tensor.to_vector() == std::vector<float>{1, 2});
}

TEST_CASE("safetensors: saving into a missing directory or over a directory fails cleanly") {
  TempDir dir;
  const std::string missing = dir.file("no/such/dir/ckpt.safetensors");
  try {
    io::save_safetensors(missing, {{"w", f32({1}, {1})}});
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).rfind(missing, 0) == 0);
  }
  CHECK_FALSE(fs::exists(dir.path / "no"));

  // The rename is what fails here, after the data was written: the temporary must go.
  const std::string is_dir = dir.file("ckpt.safetensors");
  fs::create_directory(is_dir);
  CHECK_THROWS_AS(io::save_safetensors(is_dir, {{"w", f32({1}, {1})}}), InputError);
  CHECK(fs::is_directory(is_dir));
  CHECK(temp_files_in(dir.path) == 0);
}

// ---- ParamStore -------------------------------------------------------------------------------

TEST_CASE("safetensors: ParamStore add, get, remove, replace, numel") {
  ParamStore ps;
  Tensor& w = ps.add("layer.weight", {3, 4});
  ps.add("layer.bias", {4});
  ps.add("head.weight", {4, 2});
  CHECK(w.dtype() == DType::f32);
  CHECK(w.to_vector() == std::vector<float>(12, 0.0f));
  CHECK(ps.size() == 3);
  CHECK(ps.numel() == 12 + 4 + 8);
  CHECK(ps.names() == std::vector<std::string>{"layer.weight", "layer.bias", "head.weight"});
  CHECK(ps.contains("layer.bias"));
  CHECK(&ps.get("layer.weight") == &w);
  CHECK_THROWS_AS(ps.add("layer.bias", {4}), Error);
  CHECK_THROWS_WITH_AS(ps.get("nope"), "ParamStore: no parameter named \"nope\" (the store has 3 parameters)", Error);

  ps.replace("layer.weight", Tensor::full({2, 4}, 1.0f)); // pruning may change the shape
  CHECK(ps.get("layer.weight").shape() == Shape{2, 4});
  CHECK(ps.numel() == 8 + 4 + 8);
  CHECK_THROWS_AS(ps.replace("nope", Tensor::full({1}, 1.0f)), Error);

  ps.remove("layer.bias");
  CHECK_FALSE(ps.contains("layer.bias"));
  CHECK(ps.names() == std::vector<std::string>{"layer.weight", "head.weight"});
  CHECK(ps.numel() == 16);
  CHECK_THROWS_AS(ps.remove("layer.bias"), Error);
  const ParamStore& cps = ps;
  CHECK(cps.get("head.weight").shape() == Shape{4, 2});
}

TEST_CASE("safetensors: ParamStore save/load round trip in creation order") {
  TempDir dir;
  const std::string path = dir.file("params.safetensors");
  ParamStore a;
  a.add("z.weight", {2, 3}).copy_from(f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  a.add("a.bias", {3}).copy_from(f32({3}, {-1, -2, -3}));
  a.add("m.scale", {}).fill(0.5f);
  a.replace("m.scale", Tensor::full({}, 0.25f));
  a.save(path, {{"step", "100"}});

  const auto c = io::load_safetensors(path);
  REQUIRE(c.tensors.size() == 3);
  CHECK(c.tensors[0].name == "z.weight"); // creation order, not alphabetical
  CHECK(c.tensors[1].name == "a.bias");
  CHECK(c.tensors[2].name == "m.scale");
  CHECK(c.metadata.at("step") == "100");
  CHECK(c.metadata.at("format") == "pt");

  ParamStore b;
  Tensor& bw = b.add("z.weight", {2, 3});
  const Tensor alias = bw; // a view someone holds: load must update it in place
  b.add("a.bias", {3});
  b.add("m.scale", {});
  b.load(path);
  CHECK(bw.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(alias.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(b.get("a.bias").to_vector() == std::vector<float>{-1, -2, -3});
  CHECK(b.get("m.scale").to_vector() == std::vector<float>{0.25f});
}

TEST_CASE("safetensors: ParamStore load reports missing, mismatched and unexpected tensors by name") {
  TempDir dir;
  const std::string path = dir.file("params.safetensors");
  ParamStore saved;
  saved.add("enc.weight", {2, 3}).fill(1.0f);
  saved.add("enc.bias", {3}).fill(2.0f);
  saved.add("extra.weight", {1});
  saved.save(path);

  auto load_message = [&](ParamStore& ps) -> std::string {
    try {
      ps.load(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };

  SUBCASE("a missing tensor and an unexpected one") {
    ParamStore ps;
    ps.add("enc.weight", {2, 3});
    ps.add("enc.bias", {3});
    ps.add("dec.weight", {3});
    CHECK_THROWS_AS(ps.load(path), InputError);
    const std::string msg = load_message(ps);
    INFO(msg);
    CHECK(msg.rfind(path + ": ", 0) == 0);
    CHECK(msg.find("missing") != std::string::npos);
    CHECK(msg.find("\"dec.weight\"") != std::string::npos);
    CHECK(msg.find("unexpected") != std::string::npos);
    CHECK(msg.find("\"extra.weight\"") != std::string::npos);
    CHECK(ps.get("enc.bias").to_vector() == std::vector<float>{0, 0, 0}); // unchanged: all or nothing
  }
  SUBCASE("a shape mismatch") {
    ParamStore ps;
    ps.add("enc.weight", {3, 2});
    ps.add("enc.bias", {3});
    ps.add("extra.weight", {1});
    const std::string msg = load_message(ps);
    INFO(msg);
    CHECK(msg.rfind(path + ": ", 0) == 0);
    CHECK(msg.find("shape") != std::string::npos);
    CHECK(msg.find("\"enc.weight\" (file f32 [2, 3], model f32 [3, 2])") != std::string::npos);
  }
  SUBCASE("a dtype mismatch") {
    ParamStore ps;
    ps.add("enc.weight", {2, 3});
    ps.add("enc.bias", {3});
    ps.add("extra.weight", {1});
    ps.replace("enc.bias", Tensor::zeros({3}, DType::bf16));
    const std::string msg = load_message(ps);
    INFO(msg);
    CHECK(msg.find("\"enc.bias\" (file f32 [3], model bf16 [3])") != std::string::npos);
  }
  SUBCASE("a corrupt file names the file") {
    write_bytes(path, "garbage!");
    ParamStore ps;
    ps.add("enc.weight", {2, 3});
    const std::string msg = load_message(ps);
    CHECK(msg.rfind(path + ": ", 0) == 0);
  }
  SUBCASE("a missing file names the file") {
    ParamStore ps;
    ps.add("enc.weight", {2, 3});
    fs::remove(path);
    const std::string msg = load_message(ps);
    CHECK(msg.rfind(path + ": ", 0) == 0);
  }
}
