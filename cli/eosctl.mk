# eosctl (cli/eosctl*.c): included by cli/local.mk.
