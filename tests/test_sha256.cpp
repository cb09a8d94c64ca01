// The hashes behind dataset verification: SHA-256 against the FIPS 180-4 / NIST example vectors
// (including streamed input in awkward chunk sizes); SHA-1 against the same NIST examples and git's
// blob ids (how `data import` recognizes canonical files); MD5 against RFC 1321's test suite (MD5
// only decides the debian-synopsis split, but that rule must match `md5sum` and Python).
#include <doctest/doctest.h>

#include <string>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "datasets/md5.h"
#include "datasets/sha1.h"
#include "datasets/sha256.h"

using namespace pillars::data;

TEST_CASE("sha256 NIST vectors") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // the 448-bit message: its padding needs a second block
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmno"
                   "pqrstnopqrstu") == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256 streaming gives the one-shot digest for any chunking") {
  std::string message;
  for (int i = 0; i < 1000; ++i) message += static_cast<char>((i * 7919) & 0xff);
  const std::string expected = sha256_hex(message);
  for (size_t chunk : {1u, 3u, 55u, 63u, 64u, 65u, 127u, 999u}) {
    Sha256 h;
    for (size_t pos = 0; pos < message.size(); pos += chunk) h.update(message.substr(pos, chunk));
    CHECK_MESSAGE(h.hex() == expected, "chunk size " << chunk);
  }
  Sha256 h; // one million 'a' in 4096-byte pieces, as a file would be read
  const std::string block(4096, 'a');
  size_t left = 1000000;
  for (; left >= block.size(); left -= block.size()) h.update(block);
  h.update(block.data(), left);
  CHECK(h.hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  h.reset();
  h.update("abc");
  CHECK(h.hex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("md5 RFC 1321 test suite") {
  CHECK(md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e");
  CHECK(md5_hex("a") == "0cc175b9c0f1b6a831c399e269772661");
  CHECK(md5_hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
  CHECK(md5_hex("message digest") == "f96b697d7cb7938d525a2f31aaf161d0");
  CHECK(md5_hex("abcdefghijklmnopqrstuvwxyz") == "c3fcd3d76192e4007dfb496cca67e13b");
  CHECK(md5_hex("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") ==
        "d174ab98d277d9f5a5611c2c9f419d9f");
  CHECK(md5_hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890") ==
        "57edf4a22be3c955ac49da2e2107b67a");
  // the split rule's "md5 as an integer mod 100", as Python computes int(md5(x).hexdigest(), 16) % 100
  CHECK(md5_mod("abc", 100) == 70);
  CHECK(md5_mod("0ad", 100) == 68);
  CHECK(md5_mod("", 100) == 66);
}

TEST_CASE("sha1 NIST vectors and git blob ids") {
  CHECK(sha1_hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
  CHECK(sha1_hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  CHECK(sha1_hex(std::string(1000000, 'a')) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  const std::string path = (std::filesystem::temp_directory_path() / "pillars_git_blob_test.txt").string();
  std::ofstream(path, std::ios::binary) << "hello\n";
  CHECK(git_blob_id(path) == "ce013625030ba8dba906f756967f9e9ca394464a"); // `echo hello | git hash-object --stdin`
  std::remove(path.c_str());
}
