# Benchmarks are not part of `make check`: `make bench` builds and runs the store benchmark,
# `make bench-fs` the filesystem benchmark, `make bench-publish` the publish gate's benchmark
# (bench/README.md).
EXTRA_PROGRAMS = bench/store-bench bench/fs-files bench/publish-bench
EOS_BENCH_BINARIES = bench/store-bench bench/fs-files bench/publish-bench
# bench/squash-block: how long a squash blocks publishes (bench/README.md, "squash").
EXTRA_PROGRAMS += bench/squash-block
EOS_BENCH_BINARIES += bench/squash-block
bench_squash_block_SOURCES = bench/squash-block.c
bench_squash_block_LDADD = $(STORE_LIBS) -lpthread
bench_store_bench_SOURCES = bench/store-bench.c
bench_store_bench_LDADD = $(STORE_LIBS)
bench_fs_files_SOURCES = bench/fs-files.c
bench_publish_bench_SOURCES = bench/publish.h bench/publish.c bench/publish-tree.c \
	bench/publish-latency.c bench/publish-concurrent.c bench/publish-git.c \
	bench/publish-report.c
bench_publish_bench_LDADD = $(STORE_LIBS)
CLEANFILES += $(EOS_BENCH_BINARIES)

# bench/fs builds tools/eosfs itself (and leaves eos out of the run when it cannot).
.PHONY: bench-fs
bench-fs: bench/fs-files tools/eos-store
	$(SHELL) $(top_srcdir)/bench/fs

# bench/publish builds bench/publish-bench itself; BENCH_PUBLISH_FLAGS passes options (--quick).
.PHONY: bench-publish
bench-publish: bench/publish-bench
	$(SHELL) $(top_srcdir)/bench/publish $(BENCH_PUBLISH_FLAGS)
