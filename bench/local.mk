# Benchmarks are not part of `make check`: `make bench` builds and runs the store benchmark,
# `make bench-fs` the filesystem benchmark (bench/README.md).
EXTRA_PROGRAMS = bench/store-bench bench/fs-files
EOS_BENCH_BINARIES = bench/store-bench bench/fs-files
# bench/squash-block: how long a squash blocks publishes (bench/README.md, "squash").
EXTRA_PROGRAMS += bench/squash-block
EOS_BENCH_BINARIES += bench/squash-block
bench_squash_block_SOURCES = bench/squash-block.c
bench_squash_block_LDADD = $(STORE_LIBS) -lpthread
bench_store_bench_SOURCES = bench/store-bench.c
bench_store_bench_LDADD = $(STORE_LIBS)
bench_fs_files_SOURCES = bench/fs-files.c
CLEANFILES += $(EOS_BENCH_BINARIES)

# bench/fs builds tools/eosfs itself (and leaves eos out of the run when it cannot).
.PHONY: bench-fs
bench-fs: bench/fs-files tools/eos-store
	$(SHELL) $(top_srcdir)/bench/fs
