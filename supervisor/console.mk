# The web console (doc/console.md): its page, styles and ES modules are real files under
# supervisor/console/, embedded into eosd at build time by supervisor/console-embed (a build
# tool of our own, run on the build machine) as supervisor/console-assets.c. Included by
# supervisor/local.mk.
CONSOLE_FILES = \
	supervisor/console/index.html \
	supervisor/console/console.css \
	supervisor/console/app.js \
	supervisor/console/api.js \
	supervisor/console/ui.js \
	supervisor/console/sandboxes.js \
	supervisor/console/sandbox.js \
	supervisor/console/session.js \
	supervisor/console/command.js \
	supervisor/console/files.js \
	supervisor/console/layers.js \
	supervisor/console/obs.js
EXTRA_DIST += $(CONSOLE_FILES)

noinst_PROGRAMS += supervisor/console-embed
supervisor_console_embed_SOURCES = supervisor/console-embed.c

nodist_supervisor_libeosd_a_SOURCES = supervisor/console-assets.c
CLEANFILES += supervisor/console-assets.c
supervisor/console-assets.c: supervisor/console-embed$(EXEEXT) $(CONSOLE_FILES)
	$(AM_V_GEN)$(MKDIR_P) supervisor && \
	(cd $(srcdir) && $(abs_builddir)/supervisor/console-embed$(EXEEXT) supervisor/console/ \
		$(CONSOLE_FILES)) >$@.tmp && mv $@.tmp $@
