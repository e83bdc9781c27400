# eosd integration tests: included by tests/local.mk.
EOSD_TESTS = tests/integration/eosd-gateway.sh
TESTS += $(EOSD_TESTS)
EXTRA_DIST += $(EOSD_TESTS)
