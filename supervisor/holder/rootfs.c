/* SPDX-License-Identifier: MIT */
/*
 * supervisor/holder/rootfs: the session's root, as a list of operations the holder plans and
 * init runs (bubblewrap's idea of a setup-op list, our own code).
 *
 * The new root is a tmpfs (mounted over /tmp of the private copy of the host's mounts, the one
 * directory never taken from the host), made read-only once built:
 *	/<dir>		every top-level directory of the host, a recursive read-only (nosuid,
 *			nodev) clone of its mounts; top-level symlinks as symlinks
 *	/workspace	a clone of the view (eosd's FUSE mount), nosuid, nodev, writable
 *	/dev		tmpfs: null zero full random urandom tty (the host's nodes, bound),
 *			a new devpts instance (pts/, ptmx), shm/ (tmpfs), fd and std* links
 *	/tmp, /run	private tmpfs
 *	/proc		a new proc of the session's pid namespace; sys, sysrq-trigger, irq,
 *			bus and fs bound read-only over themselves
 *	/sys		a new read-only sysfs with an isolated network (it shows only its
 *			interfaces), else the host's, read-only
 *	masks		an empty read-only tmpfs over each masked directory (eos's state and
 *			runtime directories), found by its canonical path
 * Host trees are cloned with open_tree(OPEN_TREE_CLONE) and made read-only with mount_setattr()
 * before they are attached, so no writable moment exists. Everything is taken by fd or by host
 * path before the tmpfs covers /tmp (the view's mount point may lie below /tmp).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "supervisor/holder/holder.h"

#define NEWROOT "/tmp"

enum op_kind {
	OP_PRIVATE,  /* every mount private: nothing propagates to or from the host */
	OP_CLONE,    /* slot = open_tree(a) + mount_setattr(attr) */
	OP_ATTACH,   /* move_mount(slot → b); a names the source in messages */
	OP_MOUNT,    /* mount(a, b, fstype, flags, data) */
	OP_MKDIR,    /* mkdir(b, 0755) */
	OP_MKFILE,   /* an empty file at b (a mount point) */
	OP_SYMLINK,  /* symlink(a → b) */
	OP_READONLY, /* the mount at b read-only */
	OP_HOSTNAME, /* sethostname(a) */
	OP_LOOPBACK, /* lo up */
	OP_PIVOT,    /* pivot_root into b, detach the old root */
};

struct op {
	enum op_kind kind;
	char *a, *b;
	const char *fstype, *data;
	unsigned long flags;
	uint64_t attr;
	size_t slot;
	bool recursive; /* OP_CLONE: with the mounts below */
	bool optional;	/* a missing source is skipped */
};

struct holder_rootfs {
	struct op *ops;
	size_t n, cap;
	int *fds; /* per slot, in init */
	size_t n_slots;
};

static const char *const skipped_top[] = { "dev", "proc", "sys", "tmp", "run", "workspace" };
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
static const char *const proc_readonly[] = { "sys", "sysrq-trigger", "irq", "bus", "fs" };

void
holder_rootfs_free(struct holder_rootfs *rf)
{
	if (!rf)
		return;
	for (size_t i = 0; i < rf->n; i++) {
		free(rf->ops[i].a);
		free(rf->ops[i].b);
	}
	free(rf->ops);
	free(rf->fds);
	free(rf);
}

static struct op *
add(struct holder_rootfs *rf, enum op_kind kind, const char *a, const char *b)
{
	struct op *o;

	if (eos_buf_array_reserve(&rf->ops, &rf->cap, rf->n, sizeof(*rf->ops), 64) < 0)
		return NULL;
	o = &rf->ops[rf->n];
	*o = (struct op){ .kind = kind };
	o->a = a ? strdup(a) : NULL;
	o->b = b ? strdup(b) : NULL;
	if ((a && !o->a) || (b && !o->b)) {
		free(o->a);
		free(o->b);
		return NULL;
	}
	rf->n++;
	return o;
}

/* b under the new root: NEWROOT + path. */
static struct op *
add_in(struct holder_rootfs *rf, enum op_kind kind, const char *a, const char *path)
{
	char b[PATH_MAX];

	if (snprintf(b, sizeof(b), NEWROOT "%s", path) >= (int)sizeof(b))
		return NULL;
	return add(rf, kind, a, b);
}

static struct op *
add_mount(struct holder_rootfs *rf, const char *fstype, const char *path, unsigned long flags,
	  const char *data)
{
	struct op *o = add_in(rf, OP_MOUNT, fstype, path);

	if (o) {
		o->fstype = fstype;
		o->flags = flags;
		o->data = data;
	}
	return o;
}

/* A clone of host path src into a new slot; returns the slot or -ENOMEM. */
static int
add_clone(struct holder_rootfs *rf, const char *src, bool recursive, uint64_t attr, bool optional)
{
	struct op *o = add(rf, OP_CLONE, src, NULL);

	if (!o)
		return -ENOMEM;
	o->recursive = recursive;
	o->attr = attr;
	o->optional = optional;
	o->slot = rf->n_slots++;
	return (int)o->slot;
}

static int
add_attach(struct holder_rootfs *rf, int slot, const char *src, const char *path, bool optional)
{
	struct op *o = add_in(rf, OP_ATTACH, src, path);

	if (!o)
		return -ENOMEM;
	o->slot = (size_t)slot;
	o->optional = optional;
	return 0;
}

static bool
is_skipped_top(const char *name)
{
	for (size_t i = 0; i < EOS_ARRAY_SIZE(skipped_top); i++)
		if (strcmp(name, skipped_top[i]) == 0)
			return true;
	return name[0] == '.';
}

/* A top-level entry of the host: directories are cloned (slot), symlinks copied. */
struct top {
	char name[NAME_MAX + 1];
	char target[PATH_MAX]; /* symlinks */
	bool dir;
	int slot;
};

struct tops {
	struct top *v;
	size_t n, cap;
};

static int
read_top(struct dirent *de, struct tops *t)
{
	struct stat sb;
	char path[PATH_MAX];
	struct top *e;
	ssize_t n;

	snprintf(path, sizeof(path), "/%s", de->d_name);
	if (lstat(path, &sb) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(sb.st_mode) && !S_ISLNK(sb.st_mode))
		return 0;
	if (eos_buf_array_reserve(&t->v, &t->cap, t->n, sizeof(*t->v), 32) < 0)
		return -ENOMEM;
	e = &t->v[t->n];
	*e = (struct top){ .dir = S_ISDIR(sb.st_mode), .slot = -1 };
	snprintf(e->name, sizeof(e->name), "%s", de->d_name);
	if (!e->dir) {
		n = readlink(path, e->target, sizeof(e->target) - 1);
		if (n < 0)
			return -errno;
		e->target[n] = '\0';
	}
	t->n++;
	return 0;
}

static int
list_tops(struct tops *t, struct holder_failure *f)
{
	cleanup_closedir DIR *d = opendir("/");
	struct dirent *de;
	int r;

	if (!d)
		return holder_fail(f, errno, EOS_HPROTO_STEP_MOUNT, "list '/'");
	while ((errno = 0, de = readdir(d))) {
		if (is_skipped_top(de->d_name))
			continue;
		r = read_top(de, t);
		if (r < 0)
			return holder_fail(f, -r, EOS_HPROTO_STEP_MOUNT, "stat '/%s'", de->d_name);
	}
	return errno ? holder_fail(f, errno, EOS_HPROTO_STEP_MOUNT, "list '/'") : 0;
}

static bool
top_is_dir(const struct tops *t, const char *name, size_t len)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].dir && strlen(t->v[i].name) == len &&
		    memcmp(t->v[i].name, name, len) == 0)
			return true;
	return false;
}

/* The masks that show in the new root: canonical, existing directories under a cloned one. */
static int
plan_masks(struct holder_rootfs *rf, const struct holder *h, const struct tops *t,
	   struct holder_failure *f)
{
	const unsigned long ro = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;

	for (uint32_t i = 0; i < h->plan.n_masks; i++) {
		char canon[PATH_MAX];
		struct stat sb;

		if (!realpath(h->plan.masks[i], canon)) {
			if (errno == ENOENT)
				continue;
			return holder_fail(f, errno, EOS_HPROTO_STEP_MOUNT, "mask '%s'",
					   h->plan.masks[i]);
		}
		if (stat(canon, &sb) < 0 || !S_ISDIR(sb.st_mode) ||
		    !top_is_dir(t, canon + 1, strcspn(canon + 1, "/")))
			continue;
		if (!add_mount(rf, "tmpfs", canon, ro, "mode=0755,size=4k"))
			return -ENOMEM;
	}
	return 0;
}

/* Clones of the host taken before the new root covers /tmp. */
static int
plan_clones(struct holder_rootfs *rf, const struct holder *h, struct tops *t, int *view_slot,
	    int *sys_slot, int *dev_slots)
{
	const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

	*view_slot =
		add_clone(rf, h->plan.view, false, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false);
	for (size_t i = 0; i < t->n && *view_slot >= 0; i++) {
		char src[PATH_MAX];

		if (!t->v[i].dir)
			continue;
		snprintf(src, sizeof(src), "/%s", t->v[i].name);
		t->v[i].slot = add_clone(rf, src, true, ro, false);
		if (t->v[i].slot < 0)
			return -ENOMEM;
	}
	*sys_slot = -1;
	if (h->plan.network == EOS_HPROTO_NETWORK_SHARED)
		*sys_slot = add_clone(rf, "/sys", true, ro | MOUNT_ATTR_NOEXEC, false);
	for (size_t i = 0; i < EOS_ARRAY_SIZE(dev_nodes); i++) {
		char src[64];

		snprintf(src, sizeof(src), "/dev/%s", dev_nodes[i]);
		dev_slots[i] = access(src, F_OK) == 0
				       ? add_clone(rf, src, false,
						   MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false)
				       : -2;
		if (dev_slots[i] == -ENOMEM)
			return -ENOMEM;
	}
	return *view_slot < 0 || (*sys_slot < 0 && h->plan.network == EOS_HPROTO_NETWORK_SHARED)
		       ? -ENOMEM
		       : 0;
}

static int
plan_tops(struct holder_rootfs *rf, const struct tops *t)
{
	for (size_t i = 0; i < t->n; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "/%s", t->v[i].name);
		if (!t->v[i].dir) {
			if (!add_in(rf, OP_SYMLINK, t->v[i].target, path))
				return -ENOMEM;
			continue;
		}
		if (!add_in(rf, OP_MKDIR, NULL, path) ||
		    add_attach(rf, t->v[i].slot, path, path, false) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int
plan_dev(struct holder_rootfs *rf, const int *dev_slots)
{
	static const char *const links[][2] = {
		{ "pts/ptmx", "/dev/ptmx" },	      { "/proc/self/fd", "/dev/fd" },
		{ "/proc/self/fd/0", "/dev/stdin" },  { "/proc/self/fd/1", "/dev/stdout" },
		{ "/proc/self/fd/2", "/dev/stderr" },
	};
	bool ok = add_in(rf, OP_MKDIR, NULL, "/dev") &&
		  add_mount(rf, "tmpfs", "/dev", MS_NOSUID | MS_NOEXEC, "mode=0755");

	for (size_t i = 0; ok && i < EOS_ARRAY_SIZE(dev_nodes); i++) {
		char path[64];

		if (dev_slots[i] < 0)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		ok = add_in(rf, OP_MKFILE, NULL, path) &&
		     add_attach(rf, dev_slots[i], path, path, false) == 0;
	}
	ok = ok && add_in(rf, OP_MKDIR, NULL, "/dev/pts") &&
	     add_mount(rf, "devpts", "/dev/pts", MS_NOSUID | MS_NOEXEC,
		       "newinstance,ptmxmode=0666,mode=0620") &&
	     add_in(rf, OP_MKDIR, NULL, "/dev/shm") &&
	     add_mount(rf, "tmpfs", "/dev/shm", MS_NOSUID | MS_NODEV, "mode=1777");
	for (size_t i = 0; ok && i < EOS_ARRAY_SIZE(links); i++)
		ok = add_in(rf, OP_SYMLINK, links[i][0], links[i][1]);
	return ok ? 0 : -ENOMEM;
}

static int
plan_proc_sys(struct holder_rootfs *rf, const struct holder *h, int sys_slot)
{
	const unsigned long nse = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	const uint64_t ro =
		MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	bool ok = add_in(rf, OP_MKDIR, NULL, "/proc") && add_mount(rf, "proc", "/proc", nse, NULL);

	for (size_t i = 0; ok && i < EOS_ARRAY_SIZE(proc_readonly); i++) {
		char path[64], src[96];
		int slot;

		snprintf(path, sizeof(path), "/proc/%s", proc_readonly[i]);
		snprintf(src, sizeof(src), NEWROOT "%s", path);
		slot = add_clone(rf, src, false, ro, true);
		ok = slot >= 0 && add_attach(rf, slot, path, path, true) == 0;
	}
	ok = ok && add_in(rf, OP_MKDIR, NULL, "/sys");
	if (ok && h->plan.network == EOS_HPROTO_NETWORK_ISOLATED)
		ok = add_mount(rf, "sysfs", "/sys", nse | MS_RDONLY, NULL);
	else if (ok)
		ok = add_attach(rf, sys_slot, "/sys", "/sys", false) == 0;
	return ok ? 0 : -ENOMEM;
}

static int
plan_private(struct holder_rootfs *rf, const struct holder *h)
{
	const unsigned long ns = MS_NOSUID | MS_NODEV;
	bool ok = add_in(rf, OP_MKDIR, NULL, "/tmp") &&
		  add_mount(rf, "tmpfs", "/tmp", ns, "mode=1777") &&
		  add_in(rf, OP_MKDIR, NULL, "/run") &&
		  add_mount(rf, "tmpfs", "/run", ns, "mode=0755") &&
		  add_in(rf, OP_MKDIR, NULL, "/workspace");

	(void)h;
	return ok ? 0 : -ENOMEM;
}

static int
plan_finish(struct holder_rootfs *rf, const struct holder *h)
{
	bool ok = true;

	if (h->plan.network == EOS_HPROTO_NETWORK_ISOLATED)
		ok = add(rf, OP_LOOPBACK, NULL, NULL);
	ok = ok && add(rf, OP_HOSTNAME, h->plan.hostname, NULL) &&
	     add(rf, OP_READONLY, NULL, NEWROOT) && add(rf, OP_PIVOT, NULL, NEWROOT);
	return ok ? 0 : -ENOMEM;
}

static int
plan_all(struct holder_rootfs *rf, const struct holder *h, struct tops *t, struct holder_failure *f)
{
	int view_slot, sys_slot, dev_slots[EOS_ARRAY_SIZE(dev_nodes)];
	int r = list_tops(t, f);

	if (r < 0)
		return r;
	if (!add(rf, OP_PRIVATE, NULL, NULL) ||
	    plan_clones(rf, h, t, &view_slot, &sys_slot, dev_slots) < 0 ||
	    !add_mount(rf, "tmpfs", "", MS_NOSUID | MS_NODEV, "mode=0755") ||
	    plan_tops(rf, t) < 0 || plan_dev(rf, dev_slots) < 0 || plan_private(rf, h) < 0 ||
	    add_attach(rf, view_slot, h->plan.view, "/workspace", false) < 0 ||
	    plan_proc_sys(rf, h, sys_slot) < 0)
		return holder_fail(f, ENOMEM, EOS_HPROTO_STEP_MOUNT, "plan the root");
	r = plan_masks(rf, h, t, f);
	if (r < 0)
		return r;
	if (plan_finish(rf, h) < 0)
		return holder_fail(f, ENOMEM, EOS_HPROTO_STEP_MOUNT, "plan the root");
	rf->fds = malloc(sizeof(int) * (rf->n_slots + 1));
	if (!rf->fds)
		return holder_fail(f, ENOMEM, EOS_HPROTO_STEP_MOUNT, "plan the root");
	for (size_t i = 0; i < rf->n_slots; i++)
		rf->fds[i] = -1;
	return 0;
}

int
holder_rootfs_plan(const struct holder *h, struct holder_rootfs **ret, struct holder_failure *f)
{
	struct holder_rootfs *rf = calloc(1, sizeof(*rf));
	struct tops t = { 0 };
	int r;

	if (!rf)
		return holder_fail(f, ENOMEM, EOS_HPROTO_STEP_MOUNT, "plan the root");
	r = plan_all(rf, h, &t, f);
	free(t.v);
	if (r < 0) {
		holder_rootfs_free(rf);
		return r;
	}
	*ret = rf;
	return 0;
}

/* The path as the session will see it (NEWROOT stripped). */
static const char *
shown(const char *path)
{
	size_t n = strlen(NEWROOT);

	if (path && strncmp(path, NEWROOT, n) == 0)
		return path[n] ? path + n : "/";
	return path ? path : "";
}

static int
run_clone(struct holder_rootfs *rf, const struct op *o)
{
	struct mount_attr attr = { .attr_set = o->attr };
	unsigned int flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC;
	int fd;

	flags |= o->recursive ? AT_RECURSIVE : 0;
	fd = open_tree(AT_FDCWD, o->a, flags);
	if (fd < 0)
		return -errno;
	if (mount_setattr(fd, "", AT_EMPTY_PATH | (o->recursive ? AT_RECURSIVE : 0), &attr,
			  sizeof(attr)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	rf->fds[o->slot] = fd;
	return 0;
}

static int
run_attach(struct holder_rootfs *rf, const struct op *o)
{
	int fd = rf->fds[o->slot];
	int r = 0;

	if (fd < 0)
		return o->optional ? 0 : -EBADF;
	if (move_mount(fd, "", AT_FDCWD, o->b, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		r = -errno;
	close(fd);
	rf->fds[o->slot] = -1;
	return r;
}

static int
run_loopback(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	cleanup_close int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(s, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
}

static int
run_pivot(const char *newroot)
{
	if (chdir(newroot) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return -errno;
	return 0;
}

static int
run_mkfile(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int
run_op(struct holder_rootfs *rf, const struct op *o)
{
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };

	switch (o->kind) {
	case OP_PRIVATE:
		return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ? -errno : 0;
	case OP_CLONE:
		return run_clone(rf, o);
	case OP_ATTACH:
		return run_attach(rf, o);
	case OP_MOUNT:
		return mount(o->a, o->b, o->fstype, o->flags, o->data) < 0 ? -errno : 0;
	case OP_MKDIR:
		return mkdir(o->b, 0755) < 0 ? -errno : 0;
	case OP_MKFILE:
		return run_mkfile(o->b);
	case OP_SYMLINK:
		return symlink(o->a, o->b) < 0 ? -errno : 0;
	case OP_READONLY:
		return mount_setattr(AT_FDCWD, o->b, 0, &ro, sizeof(ro)) < 0 ? -errno : 0;
	case OP_HOSTNAME:
		return sethostname(o->a, strlen(o->a)) < 0 ? -errno : 0;
	case OP_LOOPBACK:
		return run_loopback();
	case OP_PIVOT:
		return run_pivot(o->b);
	}
	return -EINVAL;
}

static int
op_failed(const struct op *o, int e, struct holder_failure *f)
{
	const enum eos_hproto_step s = EOS_HPROTO_STEP_MOUNT;

	switch (o->kind) {
	case OP_PRIVATE:
		return holder_fail(f, e, s, "make the mounts private");
	case OP_CLONE:
		return holder_fail(f, e, s, "bind '%s'", o->a);
	case OP_ATTACH:
		return holder_fail(f, e, s, "bind '%s' on '%s'", o->a, shown(o->b));
	case OP_MOUNT:
		return holder_fail(f, e, s, "mount %s on '%s'", o->fstype, shown(o->b));
	case OP_MKDIR:
	case OP_MKFILE:
		return holder_fail(f, e, s, "create '%s'", shown(o->b));
	case OP_SYMLINK:
		return holder_fail(f, e, s, "symlink '%s'", shown(o->b));
	case OP_READONLY:
		return holder_fail(f, e, s, "make '%s' read-only", shown(o->b));
	case OP_HOSTNAME:
		return holder_fail(f, e, s, "set the hostname");
	case OP_LOOPBACK:
		return holder_fail(f, e, s, "bring the loopback interface up");
	case OP_PIVOT:
		return holder_fail(f, e, s, "pivot_root");
	}
	return holder_fail(f, e, s, "setup");
}

int
holder_rootfs_run(struct holder_rootfs *rf, struct holder_failure *f)
{
	for (size_t i = 0; i < rf->n; i++) {
		const struct op *o = &rf->ops[i];
		int r = run_op(rf, o);

		if (r == -ENOENT && o->optional)
			continue;
		if (r < 0)
			return op_failed(o, -r, f);
	}
	return 0;
}
