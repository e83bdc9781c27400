/* SPDX-License-Identifier: MIT */
/*
 * fs-conformance's permission group: what the kernel decides from the modes and owners a
 * filesystem reports, as the unprivileged caller and, run as root with --uid, as another user
 * against root's files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "tests/integration/fs-conformance.h"

static bool
mode_is(int dfd, const char *path, unsigned want)
{
	struct stat st;

	return lst(dfd, path, &st) && eqo(st.st_mode & 07777, want, "mode", path);
}

/* A file with set-ID bits: chmod sets them (a create's mode may lose them to the umask). */
static bool
put_setid(int dfd, const char *path, mode_t mode)
{
	return put_mode(dfd, path, "old", 3, 0600) &&
	       sc(fchmodat(dfd, path, mode, 0), "chmod", path);
}

static bool
append_one(int dfd, const char *path)
{
	cleanup_close int fd = openat(dfd, path, O_WRONLY | O_APPEND | O_CLOEXEC);

	return sc(fd, "open", path) && write_all(fd, "w", 1, path);
}

static bool
open_trunc(int dfd, const char *path)
{
	cleanup_close int fd = openat(dfd, path, O_WRONLY | O_TRUNC | O_CLOEXEC);

	return sc(fd, "open O_TRUNC", path);
}

static bool
ftruncate_at(int dfd, const char *path)
{
	cleanup_close int fd = openat(dfd, path, O_WRONLY | O_CLOEXEC);

	return sc(fd, "open", path) && sc(ftruncate(fd, 1), "ftruncate", path);
}

/*
 * Set-user-ID and set-group-ID as ext4 keeps them, for a caller without CAP_FSETID on its own
 * files: a write, a truncate and a chown clear them (set-group-ID only with group execute: without
 * it the bit marks mandatory locking, not a privilege); directories pass set-group-ID on.
 */
static void
perm_setid_own(struct fsc *t)
{
	struct stat d, st;

	tap(put_setid(t->g, "s-w", 06755) && append_one(t->g, "s-w") && mode_is(t->g, "s-w", 0755),
	    "a write by the owner clears set-user-ID and set-group-ID");
	tap(put_setid(t->g, "s-nx", 02745) && append_one(t->g, "s-nx") &&
		    mode_is(t->g, "s-nx", 02745),
	    "set-group-ID without group execute survives a write");
	tap(put_setid(t->g, "s-t", 06755) &&
		    sc(truncate(path_in(t, "s-t"), 1), "truncate", "s-t") &&
		    mode_is(t->g, "s-t", 0755) && put_setid(t->g, "s-f", 06755) &&
		    ftruncate_at(t->g, "s-f") && mode_is(t->g, "s-f", 0755),
	    "truncate and ftruncate clear the set-ID bits");
	tap(put_setid(t->g, "s-o", 06755) && open_trunc(t->g, "s-o") && mode_is(t->g, "s-o", 0755),
	    "open with O_TRUNC clears the set-ID bits");
	tap(put_setid(t->g, "s-c", 06755) &&
		    sc(fchownat(t->g, "s-c", geteuid(), getegid(), 0), "chown", "s-c") &&
		    mode_is(t->g, "s-c", 0755),
	    "chown to its own uid and gid clears the set-ID bits");
	tap(sc(mkdirat(t->g, "sg", 0755), "mkdir", "sg") &&
		    sc(fchmodat(t->g, "sg", 02755, 0), "chmod", "sg") && lst(t->g, "sg", &d) &&
		    sc(mkdirat(t->g, "sg/sub", 0755), "mkdir", "sg/sub") &&
		    mode_is(t->g, "sg/sub", 02755) && put(t->g, "sg/f", "f") &&
		    mode_is(t->g, "sg/f", 0644) && lst(t->g, "sg/f", &st) &&
		    eq(st.st_gid, d.st_gid, "st_gid", "sg/f") &&
		    sc(fchownat(t->g, "sg", geteuid(), getegid(), 0), "chown", "sg") &&
		    mode_is(t->g, "sg", 02755),
	    "a set-group-ID directory passes its group and (to directories) the bit on, "
	    "and keeps it through chown");
}

/* Root's own files: CAP_FSETID keeps the bits through writes; chown clears them anyway. */
static void
perm_setid_root(struct fsc *t)
{
	tap(put_setid(t->g, "k-w", 06755) && append_one(t->g, "k-w") &&
		    sc(truncate(path_in(t, "k-w"), 1), "truncate", "k-w") &&
		    open_trunc(t->g, "k-w") && mode_is(t->g, "k-w", 06755),
	    "root's write and truncates keep the set-ID bits (CAP_FSETID)");
	tap(put_setid(t->g, "k-c", 06755) &&
		    sc(fchownat(t->g, "k-c", 12345, 23456, 0), "chown", "k-c") &&
		    mode_is(t->g, "k-c", 0755) && put_setid(t->g, "k-cnx", 02745) &&
		    sc(fchownat(t->g, "k-cnx", 12345, 23456, 0), "chown", "k-cnx") &&
		    mode_is(t->g, "k-cnx", 02745),
	    "chown by root clears set-user-ID, and set-group-ID where group execute is set");
	tap(sc(mkdirat(t->g, "k-d", 0755), "mkdir", "k-d") &&
		    sc(fchmodat(t->g, "k-d", 02755, 0), "chmod", "k-d") &&
		    sc(fchownat(t->g, "k-d", 12345, 23456, 0), "chown", "k-d") &&
		    mode_is(t->g, "k-d", 02755),
	    "chown by root keeps a directory's set-group-ID");
}

static void
perm_own(struct fsc *t)
{
	tap(put_mode(t->g, "p0000", "z", 1, 0) &&
		    open_fails(t->g, "p0000", O_RDONLY, EACCES, EACCES),
	    "open of an own mode 0000 file -> EACCES");
	tap(put_mode(t->g, "p0444", "r", 1, 0444) &&
		    open_fails(t->g, "p0444", O_WRONLY, EACCES, EACCES) &&
		    has_str(t->g, "p0444", "r"),
	    "open for write of a 0444 file -> EACCES, read works");
	tap(se(truncate(path_in(t, "p0444"), 0), EACCES, "truncate", "p0444") &&
		    se(faccessat(t->g, "p0444", W_OK, 0), EACCES, "access W_OK", "p0444"),
	    "truncate and access(W_OK) of a 0444 file -> EACCES");
	tap(sc(mkdirat(t->g, "d0555", 0755), "mkdir", "d0555") && put(t->g, "d0555/x", "x") &&
		    sc(fchmodat(t->g, "d0555", 0555, 0), "chmod", "d0555") &&
		    open_fails(t->g, "d0555/new", O_CREAT | O_WRONLY, EACCES, EACCES) &&
		    se(mkdirat(t->g, "d0555/sub", 0755), EACCES, "mkdir", "d0555/sub") &&
		    se(unlinkat(t->g, "d0555/x", 0), EACCES, "unlink", "d0555/x") &&
		    se(renameat(t->g, "d0555/x", t->g, "moved"), EACCES, "rename", "d0555/x"),
	    "create, mkdir, unlink and rename in a 0555 directory -> EACCES");
	tap(sc(mkdirat(t->g, "d0600", 0755), "mkdir", "d0600") && put(t->g, "d0600/x", "x") &&
		    sc(fchmodat(t->g, "d0600", 0600, 0), "chmod", "d0600") &&
		    se(faccessat(t->g, "d0600/x", F_OK, AT_EACCESS), EACCES, "access", "d0600/x") &&
		    open_fails(t->g, "d0600/x", O_RDONLY, EACCES, EACCES),
	    "lookup in a directory without search permission -> EACCES");
	tap(sc(mkdirat(t->g, "d0300", 0755), "mkdir", "d0300") && put(t->g, "d0300/x", "x") &&
		    sc(fchmodat(t->g, "d0300", 0300, 0), "chmod", "d0300") &&
		    open_fails(t->g, "d0300", O_RDONLY | O_DIRECTORY, EACCES, EACCES) &&
		    has_str(t->g, "d0300/x", "x"),
	    "opendir of a directory without read permission -> EACCES, lookup works");
	tap(se(fchownat(t->g, "p0444", 0, (gid_t)-1, 0), EPERM, "chown", "p0444"),
	    "chown of an own file to root -> EPERM");
	tap(se2(setxattr(path_in(t, "p0444"), "trusted.eos", "x", 1, 0), EPERM, ENOTSUP, "setxattr",
		"p0444"),
	    "setxattr trusted.* as non-root -> EPERM or ENOTSUP");
	fchmodat(t->g, "d0555", 0755, 0);
	fchmodat(t->g, "d0600", 0755, 0);
	fchmodat(t->g, "d0300", 0755, 0);
}

static void
perm_other(struct fsc *t)
{
	const struct timespec ts[2] = { { 1, 0 }, { 2, 0 } };

	tap(open_fails(t->g, "r0600", O_RDONLY, EACCES, EACCES),
	    "open of root's 0600 file -> EACCES");
	tap(has_str(t->g, "r0644", "public") && open_fails(t->g, "r0644", O_WRONLY, EACCES, EACCES),
	    "root's 0644 file: read works, write -> EACCES");
	tap(se(fchmodat(t->g, "r0644", 0777, 0), EPERM, "chmod", "r0644") &&
		    se(fchownat(t->g, "r0644", getuid(), (gid_t)-1, 0), EPERM, "chown", "r0644"),
	    "chmod and chown of root's file -> EPERM");
	tap(se(utimensat(t->g, "r0666", ts, 0), EPERM, "utimensat", "r0666") &&
		    sc(utimensat(t->g, "r0666", NULL, 0), "utimensat now", "r0666") &&
		    se(utimensat(t->g, "r0644", NULL, 0), EACCES, "utimensat now", "r0644"),
	    "utimensat: explicit times on another's file -> EPERM; now needs write access");
	tap(open_fails(t->g, "rdir/new", O_CREAT | O_WRONLY, EACCES, EACCES),
	    "create in root's 0755 directory -> EACCES");
	tap(se(unlinkat(t->g, "sticky/rootfile", 0), EPERM, "unlink", "sticky/rootfile") &&
		    se(renameat(t->g, "sticky/rootfile", t->g, "sticky/moved"), EPERM, "rename",
		       "sticky/rootfile"),
	    "unlink and rename of root's file in a sticky directory -> EPERM");
	tap(put(t->g, "sticky/rootfile", "written") && put(t->g, "sticky/mine", "mine") &&
		    sc(unlinkat(t->g, "sticky/mine", 0), "unlink", "sticky/mine"),
	    "in a sticky directory: write a 0666 file of root's, create and unlink an own file");
	tap(append_one(t->g, "r-sw") && mode_is(t->g, "r-sw", 0777),
	    "a write to root's 06777 file clears its set-ID bits");
	tap(sc(truncate(path_in(t, "r-st"), 1), "truncate", "r-st") &&
		    mode_is(t->g, "r-st", 0777) && open_trunc(t->g, "r-so") &&
		    mode_is(t->g, "r-so", 0777),
	    "truncate and open(O_TRUNC) of root's 06777 files clear their set-ID bits");
	tap(sc(fchmodat(t->g, "u-g0", 02755, 0), "chmod", "u-g0") && mode_is(t->g, "u-g0", 0755),
	    "chmod g+s of an own file of a group the caller is not in drops the bit");
}

static bool
perm_fixtures(struct fsc *t)
{
	return sc(fchmod(t->g, 0777), "chmod", ".") && put_mode(t->g, "r0600", "secret", 6, 0600) &&
	       put_mode(t->g, "r0644", "public", 6, 0644) &&
	       put_mode(t->g, "r0666", "all", 3, 0666) &&
	       sc(mkdirat(t->g, "rdir", 0755), "mkdir", "rdir") &&
	       sc(mkdirat(t->g, "sticky", 0755), "mkdir", "sticky") &&
	       sc(fchmodat(t->g, "sticky", 01777, 0), "chmod", "sticky") &&
	       put_mode(t->g, "sticky/rootfile", "r", 1, 0666) && put_setid(t->g, "r-sw", 06777) &&
	       put_setid(t->g, "r-st", 06777) && put_setid(t->g, "r-so", 06777) &&
	       put_mode(t->g, "u-g0", "u", 1, 0644) &&
	       sc(fchownat(t->g, "u-g0", t->uid, 0, 0), "chown", "u-g0");
}

/* Root: drop to --uid in a child that prints its own TAP lines and reports its counts. */
static void
perm_dropped(struct fsc *t)
{
	int p[2], counts[2];
	pid_t pid;

	if (!tap(perm_fixtures(t) && sc(pipe2(p, O_CLOEXEC), "pipe", "-"),
		 "root prepares files of its own for uid %u", (unsigned)t->uid))
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (tap(sc(setgroups(0, NULL), "setgroups", "-") &&
				sc(setgid(t->gid), "setgid", "-") &&
				sc(setuid(t->uid), "setuid", "-") &&
				eq(geteuid(), t->uid, "euid", "-"),
			"drop privileges to uid %u gid %u", (unsigned)t->uid, (unsigned)t->gid)) {
			perm_own(t);
			perm_setid_own(t);
			perm_other(t);
		}
		counts[0] = tap_count;
		counts[1] = tap_failed;
		_exit(write(p[1], counts, sizeof(counts)) == sizeof(counts) ? 0 : 1);
	}
	close(p[1]);
	if (pid > 0 && read(p[0], counts, sizeof(counts)) == sizeof(counts)) {
		tap_count = counts[0];
		tap_failed = counts[1];
	} else {
		tap(false, "the unprivileged child reports its results");
	}
	close(p[0]);
	if (pid > 0)
		wait_child(pid);
}

/* A regular file at the top of DIR that another user owns and only its owner may write. */
static bool
foreign_file(struct fsc *t, char *name, size_t cap)
{
	int fd = openat(t->root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	const struct dirent *e;
	struct stat st;
	bool found = false;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!found && (e = readdir(d)))
		found = fstatat(t->root, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			S_ISREG(st.st_mode) && st.st_uid != geteuid() && !(st.st_mode & 0022) &&
			snprintf(name, cap, "%s", e->d_name) < (int)cap;
	closedir(d);
	return found;
}

/* Unprivileged: the checks against another owner's files, on one DIR holds (never changed). */
static void
perm_foreign(struct fsc *t)
{
	const struct timespec ts[2] = { { 1, 0 }, { 2, 0 } };
	char name[256];

	if (!foreign_file(t, name, sizeof(name))) {
		tap_skip("permission checks against another owner's files",
			 "DIR holds no file of another owner (as root they run with --uid)");
		return;
	}
	tap(open_fails(t->root, name, O_WRONLY, EACCES, EACCES) &&
		    se(fchmodat(t->root, name, 0777, 0), EPERM, "chmod", name) &&
		    se(fchownat(t->root, name, geteuid(), (gid_t)-1, 0), EPERM, "chown", name) &&
		    se(utimensat(t->root, name, ts, 0), EPERM, "utimensat", name),
	    "another owner's '%s': write -> EACCES, chmod, chown, utimensat -> EPERM", name);
}

/* Root without --uid: the checks run as nobody. */
static void
default_uid(struct fsc *t)
{
	const struct passwd *pw = getpwnam("nobody");

	t->uid = pw ? pw->pw_uid : 65534;
	t->gid = pw ? pw->pw_gid : 65534;
	t->have_uid = true;
}

void
g_perm(struct fsc *t)
{
	if (!t->is_root) {
		perm_own(t);
		perm_setid_own(t);
		perm_foreign(t);
		return;
	}
	if (!t->have_uid)
		default_uid(t);
	perm_setid_root(t);
	perm_dropped(t);
}
