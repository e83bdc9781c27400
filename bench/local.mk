# Benchmarks are not part of `make check`: `make bench` builds and runs them.
EXTRA_PROGRAMS = bench/store-bench
EOS_BENCH_BINARIES = bench/store-bench
bench_store_bench_SOURCES = bench/store-bench.c
bench_store_bench_LDADD = $(STORE_LIBS)
CLEANFILES += $(EOS_BENCH_BINARIES)
