// The Moses tokenizer/detokenizer ports (text/moses.h) and the Unicode helpers under them.
//
// Hand cases: the expected strings were produced by the Moses Perl scripts themselves (the
// December 2017 versions, run with perl 5.36). The data cases need PILLARS_DATA (the dataset
// mirror): tokenizing the raw Multi30k sentences with lowercase + normalize + escape must give the
// official "lc.norm.tok" files line for line, and detok(tok(raw)) is measured against raw.
//
// Outside this suite, the port was also compared with those Perl scripts on all 67,092 raw
// Multi30k sentences (en/de/fr rules; with and without -a and escaping; normalize, lowercase and
// detokenize separately) and on 60,000 random strings over a hostile alphabet (quotes, dots,
// NBSP, control characters, CJK, "DOTMULTI"): identical output everywhere.
#include <doctest/doctest.h>

#include "skip.h"

#include <chrono>
#include <string>
#include <vector>

#include "test_text_util.h"
#include "text/moses.h"
#include "text/unicode.h"

using namespace pillars;
using namespace pillars::text;

namespace {

struct Case {
  const char* in;
  const char* out;
};

MosesOptions opts(const std::string& lang, bool escape = false, bool aggressive = false, bool lc_norm = false) {
  MosesOptions o;
  o.lang = lang;
  o.escape = escape;
  o.aggressive_hyphen = aggressive;
  o.lowercase = o.normalize_punctuation = lc_norm;
  return o;
}

void check_cases(const std::vector<Case>& cases, const MosesOptions& o) {
  for (const Case& c : cases) {
    CAPTURE(c.in);
    CHECK(moses_tokenize(c.in, o) == c.out);
  }
}

} // namespace

TEST_CASE("moses unicode helpers: lossless UTF-8, Perl classes, Perl lc") {
  std::string mixed =
      "Grüße \xE2\x80\x9E"
      "x\xFF\xC3(y"; // „ then a stray 0xFF and a truncated sequence
  std::u32string u = utf8_decode(mixed);
  CHECK(utf8_encode(u) == mixed);
  CHECK(u[2] == U'ü');
  CHECK(is_alpha(U'ß'));
  CHECK(is_alnum(U'٣')); // Arabic-Indic digit three: Nd
  CHECK(!is_alpha(U'٣'));
  CHECK(is_number(U'²')); // No, not Nd
  CHECK(!is_alnum(U'²'));
  CHECK(is_lower(U'ª')); // Lowercase (Other_Lowercase), though not Ll
  CHECK(is_space(0xA0));
  CHECK(is_space(0x3000));
  CHECK(!is_space(0x200B)); // zero width space is not \s
  CHECK(is_currency(U'€'));
  CHECK(perl_lc_utf8("ÄÖÜ ẞ İ Σ") == "äöü ß i\u0307 σ");
}

TEST_CASE("moses nonbreaking prefixes en and de") {
  CHECK(moses_nonbreaking_prefix("en", U"Mr") == 1);
  CHECK(moses_nonbreaking_prefix("en", U"No") == 2); // #NUMERIC_ONLY#
  CHECK(moses_nonbreaking_prefix("en", U"pp") == 2);
  CHECK(moses_nonbreaking_prefix("en", U"mr") == 0);
  CHECK(moses_nonbreaking_prefix("de", U"usw") == 1);
  CHECK(moses_nonbreaking_prefix("de", U"c.-à-d") == 1);
  CHECK(moses_nonbreaking_prefix("de", U"99") == 1);
  CHECK(moses_nonbreaking_prefix("de", U"100") == 0);
  CHECK(moses_nonbreaking_prefix("de", U"Jan") == 0);
  CHECK(moses_nonbreaking_prefix("xx", U"Jan") == 1); // no list for xx: English, as the script does
}

TEST_CASE("moses tokenizer hand cases en") {
  check_cases(
      {{"Hello, world! It's 5,300 dollars.", "Hello , world ! It 's 5,300 dollars ."},
       {"Mr. Smith arrived at 3 p.m. on Jan. 5. He left.", "Mr. Smith arrived at 3 p.m. on Jan. 5 . He left ."},
       {"He said \"no\" (twice)... and left...", "He said \" no \" ( twice ) ... and left ..."},
       {"The '90s and the 1990's were fun, weren't they?", "The ' 90s and the 1990 's were fun , weren 't they ?"},
       {"See e.g. this, or No. 5 and No. Five.", "See e.g. this , or No. 5 and No . Five ."},
       {"A well-known fact: 10-20 people.", "A well-known fact : 10-20 people ."},
       {"AT&T <b> [x] | y", "AT & T < b > [ x ] | y"},
       // tokenizer.perl's own rule for a final .' leaves two spaces and a trailing one
       {"She said 'hello.'", "She said ' hello . ' "},
       {"Größe: 5€ „Zitat“ — naïve café", "Größe : 5 € „ Zitat “ — naïve café"},
       {"Wait...what?!", "Wait ... what ? !"},
       {"", ""},
       {" \t ", " \t "}, // blank lines are printed as they are
       {"two\n", "two"}},
      opts("en"));
  check_cases({{"It's a well-known AT&T [x] 10-20 'fact'.",
                "It &apos;s a well @-@ known AT &amp; T &#91; x &#93; 10 @-@ 20 &apos; fact &apos; ."}},
              opts("en", /*escape=*/true, /*aggressive=*/true));
  check_cases({{"Mr. Smith arrived at 3 p.m. on Jan. 5. He left.", "mr. smith arrived at 3 p.m. on jan . 5. he left ."},
               {"See e.g. this, or No. 5 and No. Five.", "see e.g. this , or no . 5 and no. five ."},
               {"Größe: 5€ „Zitat“ — naïve café", "größe : 5 € &quot; zitat &quot; - naïve café"},
               {"A man and a woman on a motorcycle .`", "a man and a woman on a motorcycle  . &apos; "}},
              opts("en", true, false, /*lc_norm=*/true));
}

TEST_CASE("moses tokenizer hand cases de") {
  check_cases(
      {{"Das ist z.B. der 3. Mann, ca. 5 Leute usw. gingen.", "Das ist z.B. der 3. Mann , ca. 5 Leute usw. gingen ."},
       {"Er sagte: „Das ist's!“ und ging.", "Er sagte : „ Das ist ' s ! “ und ging ."},
       {"Am 1. Januar 2018 kostet es 1.000,50 €.", "Am 1. Januar 2018 kostet es 1.000,50 € ."},
       {"Ein Mann trinkt Bier. Zwei Frauen tanzen.", "Ein Mann trinkt Bier . Zwei Frauen tanzen ."},
       {"McDonald's ist bzw. war geöffnet.", "McDonald ' s ist bzw. war geöffnet ."}},
      opts("de"));
  check_cases({{"Er sagte: „Das ist's!“ und ging.", "er sagte : &quot; das ist &apos; s ! &quot; und ging ."},
               {"Ein Mann trinkt Bier. Zwei Frauen tanzen.", "ein mann trinkt bier. zwei frauen tanzen ."},
               // normalize-punctuation -l de moves a period that ends the line after the quote
               {"Ein Schild: „Wir sind alle Arbeitnehmer.“", "ein schild : &quot; wir sind alle arbeitnehmer &quot; ."},
               {"Eine Frau verlässt Trader Joe‘s, mit einem Wagen.",
                "eine frau verlässt trader joe &apos; s , mit einem wagen ."}},
              opts("de", true, false, true));
}

TEST_CASE("moses normalize-punctuation hand cases") {
  // `` becomes '' and then '' becomes " with a space either side (the script's non-Penn default)
  CHECK(moses_normalize_punctuation("a ( b ) , c :d ; e``f''", "en") == "a (b), c:d; e \" f \" ");
  CHECK(moses_normalize_punctuation("Er sagte „ja“, dann „nein.“", "de") == "Er sagte \"ja\", dann \"nein\".");
  CHECK(moses_normalize_punctuation("He said \"yes\", then \"no.\"", "en") == "He said \"yes,\" then \"no.\"");
  CHECK(moses_normalize_punctuation("1\u00a0000 und 120\u00a0cm", "de") == "1,000 und 120 cm");
}

TEST_CASE("moses detokenizer hand cases") {
  const std::vector<std::pair<std::string, std::string>> en = {
      {"Hello , world ! It &apos;s 5,300 dollars .", "Hello, world! It's 5,300 dollars."},
      {"He said &quot; no &quot; ( twice ) ... and left ...", "He said \"no\" (twice)... and left..."},
      {"The &apos; 90s and the 1990 &apos;s were fun , weren &apos;t they ?",
       "The '90s and the 1990's were fun, weren't they?"},
      {"the Jones &apos; house", "the Jones' house"},
      {"A well @-@ known fact : 10 @-@ 20 people .", "A well-known fact: 10-20 people."},
      {"AT &amp; T &lt; b &gt; &#91; x &#93; &#124; y", "AT & T < b > [x] | y"},
      {"costs $ 5 and € 3 ¿ really ?", "costs $5 and €3 ¿really?"},
      {"   ", "   "}};
  for (const auto& [tok, raw] : en) CHECK(moses_detokenize(tok, "en") == raw);
  CHECK(moses_detokenize("Er sagte : „ Das ist &apos; s ! “ und ging .", "de") == "Er sagte: „Das ist 's!“ und ging.");
  CHECK(moses_detokenize("zwei &quot; rote &quot; äpfel , drei &quot; grüne &quot; .", "de") ==
        "zwei \"rote\" äpfel, drei \"grüne\".");
}

TEST_CASE("moses reproduces the official Multi30k lc.norm.tok files") {
  auto data = test_text::data_dir();
  if (!data) {
    SKIP_TEST("the Multi30k comparison: PILLARS_DATA is not set");
    return;
  }
  const std::string dir = *data + "/multi30k-de-en/";
  // test_2018_flickr was tokenized later and not by scripts/task1-tokenize.sh (its loop stops at
  // test_2017_mscoco). 5 of its 1,071 lines differ from what the December-2017 scripts (and this
  // port) produce: German "mundo“." tokenized as "mundo . &quot;" (an English-style quote rule),
  // "sign: &quot;", "6: 51" and an unsplit "(photo ... white) ". No version of the scripts run
  // as task1-tokenize.sh runs them gives those; the other 1,066 lines match.
  const int kTest2018Residue = 5;
  int mismatches_2018 = 0;
  size_t total = 0;
  double seconds = 0;
  for (std::string split :
       {"train", "val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco", "test_2018_flickr"}) {
    for (std::string lang : {"de", "en"}) {
      auto raw = test_text::read_xz_lines(dir + "raw/" + split + "." + lang + ".xz");
      auto ref = test_text::read_xz_lines(dir + "tok/" + split + ".lc.norm.tok." + lang + ".xz");
      REQUIRE(raw.size() == ref.size());
      MosesOptions o = opts(lang, /*escape=*/true, false, /*lc_norm=*/true);
      size_t match = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (size_t i = 0; i < raw.size(); ++i) {
        std::string ours = moses_tokenize(raw[i], o);
        if (ours == ref[i]) {
          ++match;
        } else if (split != "test_2018_flickr") {
          CAPTURE(raw[i]);
          CHECK(ours == ref[i]);
        }
      }
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      total += raw.size();
      if (split == "test_2018_flickr") mismatches_2018 += int(raw.size() - match);
      MESSAGE(split << "." << lang << ": " << match << "/" << raw.size() << " lines identical");
    }
  }
  CHECK(mismatches_2018 <= kTest2018Residue);
  MESSAGE("tokenized " << total << " lines in " << seconds << " s");
}

TEST_CASE("moses detok of tok round trip on Multi30k raw") {
  auto data = test_text::data_dir();
  if (!data) {
    SKIP_TEST("the Multi30k round trip: PILLARS_DATA is not set");
    return;
  }
  // detokenizer.perl is not an exact inverse. Most lines it misses differ from the raw text only
  // in whitespace the raw text itself got wrong (double spaces, trailing blanks: test_2018_flickr
  // has over 20 such lines per language); so we count both exact equality and equality after
  // collapsing runs of spaces and stripping the ends. The rest: a space before the final period
  // in the raw text, "Q&amp;A" written as an entity in the raw English, "# 19", "work /
  // construction", German "McDonald 's" (the contraction rule is English-only) and „quotes“
  // glued to a hyphenated word.
  auto squash = [](const std::string& s) {
    std::string out;
    for (char c : s)
      if (!(c == ' ' && (out.empty() || out.back() == ' '))) out += c;
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  for (std::string lang : {"de", "en"}) {
    for (std::string split :
         {"train", "val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco", "test_2018_flickr"}) {
      auto raw = test_text::read_xz_lines(*data + "/multi30k-de-en/raw/" + split + "." + lang + ".xz");
      size_t same = 0, same_spaces = 0;
      for (const std::string& line : raw) {
        std::string back = moses_detokenize(moses_tokenize(line, opts(lang, /*escape=*/true)), lang);
        same += back == line;
        same_spaces += squash(back) == squash(line);
      }
      double n = double(raw.size());
      MESSAGE(split << "." << lang << ": detok(tok(raw)) == raw for " << same << "/" << raw.size() << " = "
                    << 100 * same / n << "%, up to whitespace " << same_spaces << " = " << 100 * same_spaces / n
                    << "%");
      CHECK(same_spaces / n >= 0.985);
    }
  }
}
