// The nonbreaking-prefix lists of Moses (scripts/share/nonbreaking_prefixes/nonbreaking_prefix.en
// and .de), compiled in, and the lookup tokenizer.perl does with them.
//
// A word "X." is left whole when X is listed here (or, for entries marked #NUMERIC_ONLY#, when a
// number follows). The lists are the Moses files' entries in their order, comments shortened; the
// parsing below is load_prefixes() of tokenizer.perl: blank lines and lines starting with # are
// skipped, "X #NUMERIC_ONLY#" gives X the value 2, anything else the value 1.
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "text/moses.h"
#include "text/unicode.h"

namespace pillars::text {

namespace {

constexpr std::string_view kPrefixesEn = R"(#single upper-case letters: usually initials in a name
A
B
C
D
E
F
G
H
I
J
K
L
M
N
O
P
Q
R
S
T
U
V
W
X
Y
Z
#titles: often followed by upper-case names, but they do not end a sentence
Adj
Adm
Adv
Asst
Bart
Bldg
Brig
Bros
Capt
Cmdr
Col
Comdr
Con
Corp
Cpl
DR
Dr
Drs
Ens
Gen
Gov
Hon
Hr
Hosp
Insp
Lt
MM
MR
MRS
MS
Maj
Messrs
Mlle
Mme
Mr
Mrs
Ms
Msgr
Op
Ord
Pfc
Ph
Prof
Pvt
Rep
Reps
Res
Rev
Rt
Sen
Sens
Sfc
Sgt
Sr
St
Supt
Surg
#misc: odd period-ending items that never indicate breaks
v
vs
i.e
rev
e.g
# rupees
Rs
#numbers only: these only stay whole when a number follows
No #NUMERIC_ONLY# 
Nos
Art #NUMERIC_ONLY#
Nr
pp #NUMERIC_ONLY#
#month abbreviations (May is a full word)
Jan
Feb
Mar
Apr
Jun
Jul
Aug
Sep
Oct
Nov
Dec
)";

constexpr std::string_view kPrefixesDe =
    R"(#single letters: initials; no German word ends in a single lower-case letter either
A
B
C
D
E
F
G
H
I
J
K
L
M
N
O
P
Q
R
S
T
U
V
W
X
Y
Z
a
b
c
d
e
f
g
h
i
j
k
l
m
n
o
p
q
r
s
t
u
v
w
x
y
z
#Roman numerals: a dot after one of these is not a sentence break in German
I
II
III
IV
V
VI
VII
VIII
IX
X
XI
XII
XIII
XIV
XV
XVI
XVII
XVIII
XIX
XX
i
ii
iii
iv
v
vi
vii
viii
ix
x
xi
xii
xiii
xiv
xv
xvi
xvii
xviii
xix
xx
#titles and honorifics
Adj
Adm
Adv
Asst
Bart
Bldg
Brig
Bros
Capt
Cmdr
Col
Comdr
Con
Corp
Cpl
DR
Dr
Ens
Gen
Gov
Hon
Hosp
Insp
Lt
MM
MR
MRS
MS
Maj
Messrs
Mlle
Mme
Mr
Mrs
Ms
Msgr
Op
Ord
Pfc
Ph
Prof
Pvt
Rep
Reps
Res
Rev
Rt
Sen
Sens
Sfc
Sgt
Sr
St
Supt
Surg
#misc symbols
Mio
Mrd
bzw
v
vs
usw
d.h
z.B
u.a
etc
Mrd
MwSt
ggf
d.J
D.h
m.E
vgl
I.F
z.T
sogen
ff
u.E
g.U
g.g.A
c.-à-d
Buchst
u.s.w
sog
u.ä
Std
evtl
Zt
Chr
u.U
o.ä
Ltd
b.A
z.Zt
spp
sen
SA
k.o
jun
i.H.v
dgl
dergl
Co
zzt
usf
s.p.a
Dkr
Corp
bzgl
BSE
#number indicators (none is marked #NUMERIC_ONLY# in the German file)
No
Nos
Art
Nr
pp
ca
Ca
#ordinals are written with a period in German: "1." = "1st"
1
2
3
4
5
6
7
8
9
10
11
12
13
14
15
16
17
18
19
20
21
22
23
24
25
26
27
28
29
30
31
32
33
34
35
36
37
38
39
40
41
42
43
44
45
46
47
48
49
50
51
52
53
54
55
56
57
58
59
60
61
62
63
64
65
66
67
68
69
70
71
72
73
74
75
76
77
78
79
80
81
82
83
84
85
86
87
88
89
90
91
92
93
94
95
96
97
98
99
)";

using PrefixTable = std::unordered_map<std::u32string, int>;

// load_prefixes() of tokenizer.perl.
PrefixTable parse(std::string_view file) {
  PrefixTable table;
  size_t pos = 0;
  while (pos < file.size()) {
    size_t nl = file.find('\n', pos);
    if (nl == std::string_view::npos) nl = file.size();
    std::string_view item = file.substr(pos, nl - pos);
    pos = nl + 1;
    if (item.empty() || item[0] == '#') continue;
    // /(.*)[\s]+(\#NUMERIC_ONLY\#)/: the greedy (.*) leaves exactly one whitespace character.
    size_t mark = item.rfind("#NUMERIC_ONLY#");
    if (mark != std::string_view::npos && mark > 0 && (item[mark - 1] == ' ' || item[mark - 1] == '\t')) {
      table[utf8_decode(item.substr(0, mark - 1))] = 2;
    } else {
      table[utf8_decode(item)] = 1;
    }
  }
  return table;
}

} // namespace

int moses_nonbreaking_prefix(const std::string& lang, const std::u32string& word) {
  static std::once_flag once;
  static PrefixTable en, de;
  std::call_once(once, [] {
    en = parse(kPrefixesEn);
    de = parse(kPrefixesDe);
  });
  const PrefixTable& table = lang == "de" ? de : en; // no file for the language: English
  auto it = table.find(word);
  return it == table.end() ? 0 : it->second;
}

} // namespace pillars::text
