# Fuzz target of every decoder of on-disk data (tests/fuzz/fuzz-decoders.c). In `make check` it
# runs under tests/fuzz/driver.c: a deterministic campaign of mutated valid records, about five
# seconds. It joins UNIT_TESTS (which tests/local.mk adds to check_PROGRAMS and TESTS) so that
# CI's sanitizer phase runs it under ASan+UBSan too. scripts/fuzz builds it with libFuzzer.
FUZZ_SMOKE = tests/fuzz/fuzz-decoders-smoke
if HAVE_CHECK
UNIT_TESTS += $(FUZZ_SMOKE)
else
check_PROGRAMS += $(FUZZ_SMOKE)
TESTS += $(FUZZ_SMOKE)
endif
tests_fuzz_fuzz_decoders_smoke_SOURCES = tests/fuzz/driver.c tests/fuzz/fuzz-decoders.c
tests_fuzz_fuzz_decoders_smoke_CFLAGS = $(AM_CFLAGS)
tests_fuzz_fuzz_decoders_smoke_LDADD = $(STORE_LIBS)
