# eosd-sessions integration tests: included by tests/local.mk.
