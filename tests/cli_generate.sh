#!/bin/sh
# `pillars generate` and the decoding flags of `pillars translate`, end to end with the real binary:
# a tiny language model is trained for 3 updates (about 6 s), then generation must be reproducible
# under a seed, --top-k 1 must equal --greedy, and every bad flag must exit 2 naming it, before any
# allocation. Usage: cli_generate.sh PILLARS_BINARY WORK_DIR. Exit 77 (skipped) without the data.
. "$(dirname "$0")/cli_lib.sh"
"$P" train "$EXP" --out "$W/lm" --set train.max_updates=3 --set data.block_size=64 --set model.layers=2 \
  --no-eval --quiet --threads 2 || fail "training the tiny language model"

# Reproducible, streamed, and top-k 1 = greedy.
a=$("$P" generate "$W/lm" --prompt "ROMEO: What say" --max-tokens 20 --seed 3 2>/dev/null) || fail "generate"
b=$(echo "ROMEO: What say" | "$P" generate "$W/lm" --max-tokens 20 --seed 3 2>/dev/null) || fail "generate from stdin"
[ "$a" = "$b" ] || fail "the same seed gave '$a' and '$b'"
case "$a" in "ROMEO: What say"*) ;; *) fail "the output does not start with the prompt: '$a'" ;; esac
g=$("$P" generate "$W/lm" --prompt "ROMEO:" --greedy --max-tokens 12 2>/dev/null) || fail "greedy"
k=$("$P" generate "$W/lm" --prompt "ROMEO:" --top-k 1 --seed 9 --max-tokens 12 2>/dev/null) || fail "top-k 1"
[ "$g" = "$k" ] || fail "greedy '$g' differs from top-k 1 '$k'"
"$P" generate "$W/lm" --prompt "ROMEO:" --top-p 0.9 --temperature 0.7 --max-tokens 5 >/dev/null 2>&1 || fail "top-p"

# Bad input: exit 2, the flag named.
expect2() { # expect2 WHAT-MUST-BE-SAID COMMAND...
  said=$1; shift
  out=$("$@" 2>&1 </dev/null); rc=$?
  [ $rc -eq 2 ] || fail "exit $rc (not 2) for: $* — $out"
  echo "$out" | grep -q -- "$said" || fail "'$said' not named for: $* — $out"
}
expect2 "--prompt" "$P" generate "$W/lm" --prompt ""
expect2 "--prompt" "$P" generate "$W/lm" --prompt "   "
expect2 "stdin" "$P" generate "$W/lm"
expect2 "--max-tokens" "$P" generate "$W/lm" --prompt x --max-tokens 0
expect2 "--max-tokens" "$P" generate "$W/lm" --prompt x --max-tokens 1000000000000
expect2 "--top-p" "$P" generate "$W/lm" --prompt x --top-p 0
expect2 "--temperature" "$P" generate "$W/lm" --prompt x --temperature 0
expect2 "--top-k" "$P" generate "$W/lm" --prompt x --top-k -1
long=$(python3 -c "print('word ' * 100)")
expect2 "data.block_size" "$P" generate "$W/lm" --prompt "$long"
expect2 "nothing-here" "$P" generate "$W/nothing-here"
expect2 "--beam" "$P" translate "$W/lm" --beam 0
expect2 "--beam" "$P" translate "$W/lm" --beam 1000000000
expect2 "translate" "$P" translate "$W/lm"
echo "ok"
