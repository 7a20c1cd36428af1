// libstdc++'s headers read glibc's __libc_single_threaded (glibc 2.32) to
// skip atomic reference counts in programs that never started a thread.
// Defined here, hidden, as "not single-threaded", the module needs no
// glibc newer than the manylinux_2_28 baseline (see symbol_versions.h), and
// reference counts stay atomic: always correct, at the cost of a lock
// prefix where a single-threaded program would not need it.
extern "C" {
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
}
