# eosd integration tests: included by tests/local.mk.
