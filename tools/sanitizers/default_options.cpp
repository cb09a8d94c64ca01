// The sanitizers' run-time options, compiled into `pillars` and `pillars_tests` when the build has
// -DPILLARS_SANITIZE=... (CMakeLists.txt). Each runtime calls its __*_default_options hook once at
// start-up; ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS in the environment are read after these
// and win, so a developer can still change any of them for one run.
//
// The choices:
//   halt_on_error=1          the first report ends the process with a non-zero exit: a test fails
//   detect_leaks=1           LeakSanitizer runs at exit (on by default on x86-64 Linux; said here)
//   detect_stack_use_after_return=1   also catch views into a dead function's locals
//   strict_string_checks=1, check_initialization_order=1   stricter checks at no false positives
//   print_stacktrace=1       UBSan prints where, not only what
//   suppressions=...         tools/sanitizers/*.supp: third-party code only, each with its reason
#ifndef PILLARS_SANITIZER_DIR
#error "PILLARS_SANITIZER_DIR must name tools/sanitizers (set by CMakeLists.txt)"
#endif

extern "C" {

// Called by the sanitizer runtimes before main; the strings must live for the whole process.
const char* __asan_default_options() {
  return "halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:"
         "strict_string_checks=1:check_initialization_order=1";
}

const char* __lsan_default_options() { return "suppressions=" PILLARS_SANITIZER_DIR "/lsan.supp:print_suppressions=0"; }

const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1:suppressions=" PILLARS_SANITIZER_DIR "/ubsan.supp";
}

} // extern "C"
