# Benchmarks are not part of `make check`: `make bench` builds and runs the store benchmark,
# `make bench-fs` the filesystem benchmark, `make bench-publish` the publish gate's benchmark
# (bench/README.md).
EXTRA_PROGRAMS = bench/store-bench bench/fs-files bench/publish-bench
EOS_BENCH_BINARIES = bench/store-bench bench/fs-files bench/publish-bench
# bench/squash-block: how long a squash blocks publishes (bench/README.md, "squash").
EXTRA_PROGRAMS += bench/squash-block
EOS_BENCH_BINARIES += bench/squash-block
# bench/space-reclaim: disk space after destroy + gc and after squash (bench/README.md, "space").
EXTRA_PROGRAMS += bench/space-reclaim
EOS_BENCH_BINARIES += bench/space-reclaim
bench_space_reclaim_SOURCES = bench/space-reclaim.c bench/bench-util.h bench/bench-util.c
bench_space_reclaim_LDADD = $(STORE_LIBS) -lpthread
# bench/space-fill: how close to ENOSPC RocksDB gets behind the reserves (bench/README.md, "space").
EXTRA_PROGRAMS += bench/space-fill
EOS_BENCH_BINARIES += bench/space-fill
bench_space_fill_SOURCES = bench/space-fill.c bench/bench-util.h bench/bench-util.c
bench_space_fill_LDADD = $(STORE_LIBS) -lpthread
bench_squash_block_SOURCES = bench/squash-block.c bench/bench-util.h bench/bench-util.c
bench_squash_block_LDADD = $(STORE_LIBS) -lpthread
bench_store_bench_SOURCES = bench/store-bench.c
bench_store_bench_LDADD = $(STORE_LIBS)
bench_fs_files_SOURCES = bench/fs-files.c
bench_publish_bench_SOURCES = bench/publish.h bench/publish.c bench/publish-tree.c \
	bench/publish-latency.c bench/publish-concurrent.c bench/publish-git.c \
	bench/publish-report.c
bench_publish_bench_LDADD = $(STORE_LIBS)
CLEANFILES += $(EOS_BENCH_BINARIES)

# bench/fs builds fs/eosfs itself (and leaves eos out of the run when it cannot).
.PHONY: bench-fs
bench-fs: bench/fs-files cli/eos-store
	$(SHELL) $(top_srcdir)/bench/fs

# bench/publish builds bench/publish-bench itself; BENCH_PUBLISH_FLAGS passes options (--quick).
.PHONY: bench-publish
bench-publish: bench/publish-bench
	$(SHELL) $(top_srcdir)/bench/publish $(BENCH_PUBLISH_FLAGS)

# bench/churn: eosfs's memory and the session's records under a create-and-delete storm.
EXTRA_PROGRAMS += bench/fs-churn
EOS_BENCH_BINARIES += bench/fs-churn
bench_fs_churn_SOURCES = bench/fs-churn.c
.PHONY: bench-churn
bench-churn: bench/fs-churn fs/eosfs cli/eos-store
	$(SHELL) $(top_srcdir)/bench/churn

# bench/daemon: eosd's session create, live publish, fork, gateway and idle-session figures.
.PHONY: bench-daemon
bench-daemon: supervisor/eosd
	EOS_BUILD_DIR='$(abs_top_builddir)' $(SHELL) $(top_srcdir)/bench/daemon $(BENCH_DAEMON_FLAGS)

# bench/runtime: commands in sessions (issue 11): exec round trip, session create with the holder
# ready, 8 concurrent builds, make / git status / grep -r against the host.
.PHONY: bench-runtime
bench-runtime: supervisor/eosd
	EOS_BUILD_DIR='$(abs_top_builddir)' $(SHELL) $(top_srcdir)/bench/runtime $(BENCH_RUNTIME_FLAGS)

include bench/fork.mk
