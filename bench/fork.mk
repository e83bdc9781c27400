# bench/fork: a live session's costs (cold lookups, fork, live publish) on a base of N files
# (bench/README.md, "live sessions"). Not part of `make check`: `make bench/fork` builds it.
EXTRA_PROGRAMS += bench/fork
EOS_BENCH_BINARIES += bench/fork
bench_fork_SOURCES = bench/fork.c bench/bench-util.h bench/bench-util.c
bench_fork_LDADD = $(FS_LIBS)
