// Checkpoints that check themselves (train/checkpoint.h, engine/io/safetensors.h): a flipped bit
// in the tensor data, a NaN weight (or optimizer value), a parameter that is not F32, tensors the
// recorded config does not have, a checkpoint used with another run's dictionary, and one whose
// recorded model is not the run's, and a trainer state out of range or with a kept-checkpoint list
// naming another file are all refused with the file and the tensor or field named.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "base/checksum.h"
#include "engine/io/safetensors.h"
#include "train/checkpoint.h"
#include "tests/test_env.h"

using namespace pillars;
using namespace pillars::train;
namespace fs = std::filesystem;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

// Flips one bit of the byte `from_end` bytes before the end of the file (inside the tensor data).
void flip_bit(const std::string& path, std::streamoff from_end) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-from_end, std::ios::end);
  char c = 0;
  f.get(c);
  f.seekp(-from_end, std::ios::end);
  f.put(static_cast<char>(c ^ 0x10));
}

} // namespace

TEST_CASE("checksum: chunks may split words anywhere, and one changed byte changes the sum") {
  std::string data(1001, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + 3);
  Checksum64 whole;
  whole.add(data.data(), data.size());
  for (size_t cut : {1u, 3u, 8u, 13u, 500u}) {
    Checksum64 parts;
    parts.add(data.data(), cut);
    parts.add(data.data() + cut, data.size() - cut);
    CHECK(parts.hex() == whole.hex());
  }
  for (size_t at : {0u, 7u, 8u, 999u, 1000u}) {
    std::string other = data;
    other[at] ^= 1;
    Checksum64 c;
    c.add(other.data(), other.size());
    CHECK(c.hex() != whole.hex());
  }
  Checksum64 longer; // a trailing zero byte is not the same stream
  longer.add(data.data(), data.size());
  longer.add("\0", 1);
  CHECK(longer.hex() != whole.hex());
}

TEST_CASE("checkpoints: a flipped bit in the tensor data is refused, naming the file") {
  testing::ScratchDir tmp("pillars_ckcheck_");
  const TransformerConfig cfg = transformer_config("tiny");
  ParamStore p;
  init_transformer_params(cfg, p, 1);
  const std::string path = (tmp.path / "c.safetensors").string();
  save_checkpoint(path, cfg, p, nullptr, {});
  CHECK_NOTHROW(load_checkpoint(path));
  flip_bit(path, 100);
  const std::string m = message_of([&] { load_checkpoint(path); });
  CHECK(m.find(path) != std::string::npos);
  CHECK(m.find("does not match its checksum") != std::string::npos);
}

TEST_CASE(
    "checkpoints: one without a checksum is refused unless allowed, and an edited trainer state is caught by it") {
  testing::ScratchDir tmp("pillars_ckcheck_");
  const TransformerConfig cfg = transformer_config("tiny");
  ParamStore p;
  init_transformer_params(cfg, p, 1);
  const std::string path = (tmp.path / "c.safetensors").string();
  TrainerState state;
  state.updates = 5;
  save_checkpoint(path, cfg, p, nullptr, state);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  in.close();
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  nlohmann::ordered_json header = nlohmann::ordered_json::parse(bytes.substr(8, n));
  const std::string data = bytes.substr(8 + n);
  const auto rewrite = [&](const nlohmann::ordered_json& h) {
    const std::string text = h.dump();
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << out << text << data;
  };
  // The trainer state edited, the checksum kept: the checksum covers the metadata.
  nlohmann::ordered_json edited = header;
  edited["__metadata__"]["pillars.state"] = to_json(TrainerState{}).dump();
  rewrite(edited);
  std::string m = message_of([&] { load_checkpoint(path); });
  CHECK(m.find(path) != std::string::npos);
  CHECK(m.find("pillars.checksum") != std::string::npos);
  // No checksum: refused, naming the file, the key and the flag; loaded when allowed.
  nlohmann::ordered_json stripped = header;
  stripped["__metadata__"].erase("pillars.checksum");
  rewrite(stripped);
  m = message_of([&] { load_checkpoint(path); });
  CHECK(m.find(path) != std::string::npos);
  CHECK(m.find("pillars.checksum") != std::string::npos);
  CHECK(m.find("--allow-unchecked") != std::string::npos);
  allow_unchecked_checkpoints(true);
  CHECK(load_checkpoint(path).state.updates == 5);
  allow_unchecked_checkpoints(false);
}

TEST_CASE("checkpoints: a NaN or infinite weight is refused, naming the tensor and the file") {
  testing::ScratchDir tmp("pillars_ckcheck_");
  const TransformerConfig cfg = transformer_config("tiny");
  for (float bad : {std::nanf(""), INFINITY}) {
    ParamStore p;
    init_transformer_params(cfg, p, 1);
    p.get("decoder.layers.1.fc2.weight").data<float>()[5] = bad;
    const std::string path = (tmp.path / "nan.safetensors").string();
    save_checkpoint(path, cfg, p, nullptr, {}); // saving does not judge; loading does
    const std::string m = message_of([&] { load_checkpoint(path); });
    CHECK(m.find(path) != std::string::npos);
    CHECK(m.find("\"decoder.layers.1.fc2.weight\"") != std::string::npos);
    CHECK(m.find("element 5") != std::string::npos);
  }
}

TEST_CASE("checkpoints: tensors the recorded model config does not have are refused") {
  testing::ScratchDir tmp("pillars_ckcheck_");
  TransformerConfig three = transformer_config("tiny"), two = three;
  three.dec_layers = 3;
  ParamStore p;
  init_transformer_params(three, p, 1); // holds decoder layer 2 …
  const std::string path = (tmp.path / "more.safetensors").string();
  save_checkpoint(path, two, p, nullptr, {}); // … but declares 2 decoder layers
  const std::string m = message_of([&] { load_checkpoint(path); });
  CHECK(m.find(path) != std::string::npos);
  CHECK(m.find("\"decoder.layers.2.") != std::string::npos);
  CHECK(m.find("disagree") != std::string::npos);
}

TEST_CASE("checkpoints: a checkpoint used with another run's dictionary is refused") {
  testing::ScratchDir tmp("pillars_ckcheck_");
  PipelineSettings s;
  s.bpe = false;
  text::Dictionary mine, theirs;
  for (const char* w : {"a", "b", "c"}) mine.add_symbol(w);
  for (const char* w : {"a", "c", "b"}) theirs.add_symbol(w); // same size, other order
  const TextPipeline ours(s, std::nullopt, mine), other(s, std::nullopt, theirs);
  TransformerConfig cfg = transformer_config("tiny");
  cfg.vocab = static_cast<int64_t>(mine.size());
  ParamStore p;
  init_transformer_params(cfg, p, 1);
  const std::string path = (tmp.path / "v.safetensors").string();
  save_checkpoint(path, cfg, p, nullptr, {}, {{"pipeline", ours.to_json()}});
  const LoadedCheckpoint ck = load_checkpoint(path);
  CHECK_NOTHROW(check_vocabulary(ck, path, ours, "RUN"));
  const std::string m = message_of([&] { check_vocabulary(ck, path, other, "RUN"); });
  CHECK(m.find("another dictionary") != std::string::npos);
  CHECK(m.find("RUN/dict.txt") != std::string::npos);
  text::Dictionary bigger = mine;
  bigger.add_symbol("d");
  const std::string n = message_of([&] { check_vocabulary(ck, path, TextPipeline(s, std::nullopt, bigger), "RUN"); });
  CHECK(n.find("entries") != std::string::npos);
}

namespace {

// A checkpoint written tensor by tensor (what another tool, or a corrupted rewrite, could leave):
// the tiny model's parameters with `replace` swapped in, and optimizer entries `extra`.
std::string write_raw_checkpoint(const fs::path& dir, const TransformerConfig& cfg, const std::string& name,
                                 const std::vector<io::NamedTensor>& replace,
                                 const std::vector<io::NamedTensor>& extra = {}) {
  ParamStore p;
  init_transformer_params(cfg, p, 1);
  std::vector<io::NamedTensor> tensors;
  for (const std::string& n : p.names()) {
    const auto r = std::find_if(replace.begin(), replace.end(), [&](const io::NamedTensor& t) { return t.name == n; });
    tensors.push_back(r != replace.end() ? *r : io::NamedTensor{n, p.get(n)});
  }
  tensors.insert(tensors.end(), extra.begin(), extra.end());
  const std::string path = (dir / name).string();
  io::save_safetensors(path, tensors,
                       {{"pillars.model", to_json(cfg).dump()}, {"pillars.state", to_json(TrainerState{}).dump()}});
  return path;
}

} // namespace

TEST_CASE("checkpoints: a parameter of another dtype than F32 is refused, naming the file and the tensor") {
  testing::ScratchDir tmp("pillars_ckcheck_");
  const TransformerConfig cfg = transformer_config("tiny");
  ParamStore p;
  init_transformer_params(cfg, p, 1);
  const std::string name = "decoder.layers.0.fc1.weight";
  Tensor as_int = Tensor::empty(p.get(name).shape(), DType::i32); // same bytes per element as F32
  std::memset(as_int.raw(), 0, as_int.nbytes());
  const std::string path = write_raw_checkpoint(tmp.path, cfg, "i32.safetensors", {{name, as_int}});
  const std::string m = message_of([&] { load_checkpoint(path); });
  CHECK(m.find(path) != std::string::npos);
  CHECK(m.find("\"" + name + "\" is I32") != std::string::npos);
}

TEST_CASE("checkpoints: a NaN in the optimizer state is refused (a resumed run would turn it into NaN weights)") {
  testing::ScratchDir tmp("pillars_ckcheck_");
  const TransformerConfig cfg = transformer_config("tiny");
  Tensor m = Tensor::empty({4}, DType::f32);
  m.fill(0.0f);
  m.data<float>()[2] = std::nanf("");
  const std::string path =
      write_raw_checkpoint(tmp.path, cfg, "opt.safetensors", {}, {{"optimizer.decoder.layers.0.fc1.bias.exp_avg", m}});
  const std::string msg = message_of([&] { load_checkpoint(path); });
  CHECK(msg.find(path) != std::string::npos);
  CHECK(msg.find("optimizer state \"optimizer.decoder.layers.0.fc1.bias.exp_avg\"") != std::string::npos);
  CHECK(msg.find("element 2") != std::string::npos);
}

TEST_CASE("checkpoints: the recorded model must be the run's model, dropout and pruning aside") {
  testing::ScratchDir tmp("pillars_ckcheck_");
  const TransformerConfig cfg = transformer_config("tiny");
  ParamStore p;
  init_transformer_params(cfg, p, 1);
  const std::string path = (tmp.path / "c.safetensors").string();
  save_checkpoint(path, cfg, p, nullptr, {});
  const LoadedCheckpoint ck = load_checkpoint(path);
  CHECK_NOTHROW(check_model_config(ck, path, cfg, "RUN/config.json"));

  TransformerConfig other_dropout = cfg; // a training setting: the model is the same
  other_dropout.dropout = 0.3f, other_dropout.attention_dropout = 0.0f;
  CHECK_NOTHROW(check_model_config(ck, path, other_dropout, "RUN/config.json"));

  TransformerConfig gelu = cfg; // the same shapes, another model
  gelu.activation = ops::Activation::gelu;
  std::string m = message_of([&] { check_model_config(ck, path, gelu, "RUN/config.json"); });
  CHECK(m.find(path) != std::string::npos);
  CHECK(m.find("RUN/config.json") != std::string::npos);
  CHECK(m.find("model.activation") != std::string::npos);

  TransformerConfig pre = cfg;
  pre.pre_norm = !cfg.pre_norm;
  CHECK(message_of([&] { check_model_config(ck, path, pre, "E.json"); }).find("model.pre_norm") != std::string::npos);
  TransformerConfig wider = cfg;
  wider.ffn = 2 * cfg.ffn;
  CHECK(message_of([&] { check_model_config(ck, path, wider, "E.json"); }).find("model.ffn") != std::string::npos);

  // A pruned checkpoint (fewer heads in a module) belongs to its run; one with more heads does not.
  LoadedCheckpoint pruned;
  pruned.config = ck.config;
  const std::string module = attention_modules(cfg).front();
  pruned.config.module_heads[module] = 1;
  CHECK_NOTHROW(check_model_config(pruned, path, cfg, "RUN/config.json"));
  pruned.config.module_heads[module] = cfg.heads + 1;
  m = message_of([&] { check_model_config(pruned, path, cfg, "RUN/config.json"); });
  CHECK(m.find(module) != std::string::npos);
  CHECK(m.find("module_heads") != std::string::npos);
}

TEST_CASE("checkpoints: the trainer state is read strictly, each bad field named, and kept names are the run's own") {
  TrainerState s;
  s.epoch = 3, s.batch_in_epoch = 7, s.updates = 120, s.elapsed_seconds = 42.5, s.best_valid = -3.25, s.has_best = true;
  s.bad_validations = 1, s.last_validated_update = 100, s.stop_reason = "SIGTERM";
  s.kept = {{"checkpoint_e2_u100.safetensors", -3.25}, {"checkpoint_e1_u50.safetensors", -4.0}};
  const nlohmann::json good = to_json(s);
  const TrainerState back = trainer_state_from_json(good, "ck.safetensors");
  CHECK(back.updates == 120);
  CHECK(back.kept == s.kept);

  // Each bad value: the message names the file and the field.
  const std::vector<std::pair<std::string, nlohmann::json>> bad = {
      {"epoch", 0},
      {"epoch", 1.5},
      {"epoch", "2"},
      {"batch_in_epoch", -1},
      {"updates", -1},
      {"updates", int64_t{1} << 62},
      {"updates", 1e30},
      {"updates", uint64_t{18446744073709551615ull}},
      {"bad_validations", -2},
      {"last_validated_update", 121},
      {"elapsed_seconds", -1.0},
      {"has_best", 1},
      {"kept", nlohmann::json::array()},
  };
  for (const auto& [key, value] : bad) {
    nlohmann::json j = good;
    j[key] = value;
    CAPTURE(key);
    CAPTURE(value.dump());
    CHECK(message_of([&] { (void)trainer_state_from_json(j, "ck.safetensors"); }).find("ck.safetensors: ") == 0);
    CHECK(message_of([&] { (void)trainer_state_from_json(j, "ck.safetensors"); }).find(key) != std::string::npos);
  }

  for (const char* name : {"checkpoint_e1_u2.safetensors", "checkpoint_e10_u12345.safetensors"})
    CHECK_MESSAGE(is_kept_checkpoint_name(name), name);
  for (const char* name :
       {"../checkpoint_e1_u2.safetensors", "/tmp/checkpoint_e1_u2.safetensors", "pruned/checkpoint_e1_u2.safetensors",
        "dict.txt", "checkpoint_last.safetensors", "checkpoint_best.safetensors", "checkpoint_avg.safetensors",
        "checkpoint_e1_u2.json", "checkpoint_e1_u2.safetensors/..", "checkpoint_e_u2.safetensors", ""}) {
    CHECK_MESSAGE(!is_kept_checkpoint_name(name), name);
    nlohmann::json j = good;
    j["kept"] = {{name, 1.0}};
    CHECK(message_of([&] { (void)trainer_state_from_json(j, "ck.safetensors"); }).find("\"kept\"") !=
          std::string::npos);
  }
}
