# eosctl (cli/eosctl*.c, cli/http*.c): included by cli/local.mk. It talks to eosd only over the
# wire, so it links common/ and nothing else (scripts/check-includes.sh keeps it so). Everything
# but main() is in cli/libeosctl.a, which the unit tests link too.
noinst_LIBRARIES += cli/libeosctl.a
cli_libeosctl_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
cli_libeosctl_a_SOURCES = cli/eosctl.h cli/eosctl-args.c cli/eosctl-input.c cli/eosctl-help.c \
	cli/eosctl-output.c cli/eosctl-daemon.c cli/eosctl-call.c \
	cli/http.h cli/http-internal.h cli/http.c cli/http-reply.c cli/http-events.c \
	cli/eosctl-progress.c cli/eosctl-obs.c cli/eosctl-top.c cli/eosctl-exec.c \
	cli/eosctl-upstream.c cli/eosctl-console.c
EOSCTL_LIBS = cli/libeosctl.a $(COMMON_LIBS)

bin_PROGRAMS += cli/eosctl
cli_eosctl_SOURCES = cli/eosctl.c
cli_eosctl_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
cli_eosctl_LDADD = $(EOSCTL_LIBS)

# The bash completion script, generated from the catalog by the eosctl just built and installed
# where bash-completion finds it by the command's name.
bashcompletiondir = $(datadir)/bash-completion/completions
bashcompletion_DATA = cli/completions/eosctl
cli/completions/eosctl: cli/eosctl$(EXEEXT)
	$(AM_V_GEN)$(MKDIR_P) cli/completions && \
		cli/eosctl$(EXEEXT) completion bash >$@.tmp && mv $@.tmp $@
CLEANFILES += cli/completions/eosctl

# The upstream command lines: eosctl under the names sandbox-manager-cli, sandbox-runtime-cli and
# sandbox-observability-cli (eosctl picks its line by the name it runs as). Links beside eosctl,
# in the build tree (so the tests run them) and in bindir.
EOSCTL_FRONT_ENDS = sandbox-manager-cli sandbox-runtime-cli sandbox-observability-cli
all-local: cli/front-ends.stamp
cli/front-ends.stamp: cli/eosctl$(EXEEXT)
	$(AM_V_GEN)for f in $(EOSCTL_FRONT_ENDS); do \
		rm -f cli/$$f && $(LN_S) eosctl$(EXEEXT) cli/$$f || exit 1; \
	done && touch $@
CLEANFILES += cli/front-ends.stamp cli/sandbox-manager-cli cli/sandbox-runtime-cli \
	cli/sandbox-observability-cli
install-exec-hook:
	for f in $(EOSCTL_FRONT_ENDS); do \
		rm -f $(DESTDIR)$(bindir)/$$f && \
		$(LN_S) eosctl$(EXEEXT) $(DESTDIR)$(bindir)/$$f || exit 1; \
	done
uninstall-hook:
	for f in $(EOSCTL_FRONT_ENDS); do rm -f $(DESTDIR)$(bindir)/$$f; done
# eos-mcp: the MCP server over stdio (doc/mcp.md). The protocol and the tools' schemas are in
# common/ (common/mcp.h, common/catalog-schema.h) for eosd's /mcp to share; the calls go through
# eosctl's own client, linked from cli/libeosctl.a, not copied.
bin_PROGRAMS += cli/eos-mcp
cli_eos_mcp_SOURCES = cli/eos-mcp.c cli/eos-mcp.h cli/eos-mcp-run.c
cli_eos_mcp_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
cli_eos_mcp_LDADD = $(EOSCTL_LIBS) -lpthread
