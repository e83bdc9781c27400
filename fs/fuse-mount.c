/* SPDX-License-Identifier: MIT */
/*
 * fs/fuse-mount: mounting a view and serving its mounts — with libfuse's own threads
 * (eos_view_mount_serve) or from a host's threads, one request at a time
 * (eos_view_mount_receive and eos_view_mount_process) — and telling the kernel what to forget.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

#include "fs/ops-internal.h"

enum {
	/*
	 * Threads of eos_view_mount_serve() per mount. One alone made storms 1.8x slower on a
	 * 2-CPU VM (each request woke it on the other, halted CPU); 4 to 64 measured the same
	 * (bench/README.md, "2026-12-07, late").
	 */
	WORKERS = 16,
	/*
	 * A receive buffer holds the largest request: libfuse 3.14 reads up to
	 * FUSE_MAX_MAX_PAGES (256) pages plus a 4 KiB header, whatever the kernel negotiated.
	 */
	RBUF_PAGES = 256,
	RBUF_HEADER = 4096,
};

/* --- mounting --------------------------------------------------------------------------------- */

int
eos_view_mountpoint_check(const char *path, struct eos_error *err)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int r = 0;

	if (!d)
		return eos_error_set(err, eos_neg_errno(), "mountpoint '%s': %m", path);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			r = eos_error_set(err, -ENOTEMPTY,
					  "mountpoint '%s' is not empty (it holds '%s')", path,
					  e->d_name);
			break;
		}
	closedir(d);
	return r;
}

/* A view's files never grant privileges: refuse the options that would let them. */
static int
check_fuse_opts(const char *opts, struct eos_error *err)
{
	cleanup_free char *copy = opts ? strdup(opts) : NULL;
	char *save = NULL;

	if (opts && !copy)
		return eos_error_set(err, -ENOMEM, "out of memory");
	for (char *o = copy ? strtok_r(copy, ",", &save) : NULL; o; o = strtok_r(NULL, ",", &save))
		if (strcmp(o, "suid") == 0 || strcmp(o, "dev") == 0)
			return eos_error_set(err, -EINVAL,
					     "mount option '%s' is refused: a view is always "
					     "mounted nosuid,nodev",
					     o);
	return 0;
}

/*
 * The kernel decides access from the modes and owners in the replies (default_permissions), as
 * on ext4; as root, other users get in too (allow_other), as on any root-mounted filesystem.
 * fusermount3 refuses allow_other to other users unless /etc/fuse.conf says user_allow_other.
 * nosuid,nodev come last, so that nothing before them undoes them.
 */
static int
build_args(struct eos_view *v, const char *opts, struct fuse_args *args)
{
	cleanup_free char *o = NULL;

	if (asprintf(&o, "fsname=eos:%s,subtype=eos,default_permissions%s%s%s%s,nosuid,nodev",
		     v->sandbox, geteuid() == 0 ? ",allow_other" : "", v->session ? "" : ",ro",
		     opts && *opts ? "," : "", opts ? opts : "") < 0)
		return -ENOMEM;
	if (fuse_opt_add_arg(args, "eosfs") < 0 || fuse_opt_add_arg(args, "-o") < 0 ||
	    fuse_opt_add_arg(args, o) < 0)
		return -ENOMEM;
	return 0;
}

/* The view's list of its mounts, which a live publish invalidates. */
static int
mounts_add(struct eos_view *v, struct eos_view_mount *m)
{
	int r;

	pthread_mutex_lock(&v->mounts_lock);
	r = eos_buf_array_reserve(&v->mounts, &v->mounts_cap, v->nmounts, sizeof(*v->mounts), 4);
	if (r == 0)
		v->mounts[v->nmounts++] = m;
	pthread_mutex_unlock(&v->mounts_lock);
	return r;
}

static void
mounts_remove(struct eos_view *v, struct eos_view_mount *m)
{
	pthread_mutex_lock(&v->mounts_lock);
	for (size_t i = 0; i < v->nmounts; i++)
		if (v->mounts[i] == m) {
			v->mounts[i] = v->mounts[--v->nmounts];
			break;
		}
	pthread_mutex_unlock(&v->mounts_lock);
}

/*
 * The kernel answers -ENOENT for what it does not cache: nothing to forget. Called without the
 * gate: the kernel may need the locks of a request that waits there.
 */
void
eos_view_invalidate(struct eos_view *v, const struct eos_inval *iv)
{
	pthread_mutex_lock(&v->mounts_lock);
	for (size_t i = 0; i < v->nmounts; i++) {
		struct fuse_session *se = v->mounts[i]->se;

		if (!v->mounts[i]->mounted)
			continue;
		for (size_t k = 0; k < iv->nentries; k++)
			fuse_lowlevel_notify_inval_entry(se, iv->entries[k].parent,
							 iv->entries[k].name,
							 strlen(iv->entries[k].name));
		for (size_t k = 0; k < iv->n; k++)
			fuse_lowlevel_notify_inval_inode(se, iv->inos[k], 0, 0);
	}
	pthread_mutex_unlock(&v->mounts_lock);
}

void
eos_view_sync_mounts(struct eos_view *v)
{
	pthread_mutex_lock(&v->mounts_lock);
	for (size_t i = 0; i < v->nmounts; i++) {
		cleanup_close int fd = -1;

		if (!v->mounts[i]->mounted)
			continue;
		fd = open(v->mounts[i]->mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			syncfs(fd); /* best effort: what it misses joins the next delta */
	}
	pthread_mutex_unlock(&v->mounts_lock);
}

/* --- the mount's I/O: FUSE_HANDLE_KILLPRIV_V2 ------------------------------------------------ */

/*
 * With FUSE_HANDLE_KILLPRIV_V2 the kernel stops asking for security.capability before every
 * write (a GETXATTR per write(2)) and for the attributes before a chown that clears set-ID bits
 * (a GETATTR), and leaves the clearing to the view, flagging the requests that must clear.
 * libfuse 3.14 knows neither the INIT flag nor the request flags, so the mount reads and writes
 * /dev/fuse through these hooks (fuse_session_custom_io): a request and its answer are handled
 * on the thread that read it, so the flags of the last request read are per thread.
 */
static _Thread_local unsigned request_kills;

unsigned
eos_mount_request_kills(void)
{
	return request_kills;
}

static void
note_request(struct eos_view_mount *m, const void *buf, size_t len)
{
	const struct fuse_in_header *h = buf;
	const void *arg = (const char *)buf + sizeof(*h);
	size_t alen = len - sizeof(*h);

	request_kills = 0;
	if (h->opcode < EOS_VIEW_OPCODES)
		atomic_fetch_add_explicit(&m->requests[h->opcode], 1, memory_order_relaxed);
	if (h->opcode == FUSE_INIT && alen >= offsetof(struct fuse_init_in, flags2)) {
		const struct fuse_init_in *in = arg;

		m->killpriv_offered = in->flags & FUSE_HANDLE_KILLPRIV_V2;
		m->init_unique = h->unique;
	} else if (h->opcode == FUSE_WRITE && alen >= sizeof(struct fuse_write_in)) {
		if (((const struct fuse_write_in *)arg)->write_flags & FUSE_WRITE_KILL_SUIDGID)
			request_kills = EOS_KILL_WRITE;
	} else if (h->opcode == FUSE_OPEN && alen >= sizeof(struct fuse_open_in)) {
		if (((const struct fuse_open_in *)arg)->open_flags & FUSE_OPEN_KILL_SUIDGID)
			request_kills = EOS_KILL_OPEN;
	}
}

static ssize_t
io_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t r = read(fd, buf, len);

	if (r >= (ssize_t)sizeof(struct fuse_in_header))
		note_request(userdata, buf, (size_t)r);
	return r;
}

uint64_t
eos_view_mount_requests(const struct eos_view_mount *m, unsigned op)
{
	return op < EOS_VIEW_OPCODES ? atomic_load(&m->requests[op]) : 0;
}

/* The reply to INIT asks for HANDLE_KILLPRIV_V2 when the kernel offered it. */
static ssize_t
io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct eos_view_mount *m = userdata;
	const struct fuse_out_header *h = iov[0].iov_base;

	if (m->init_unique && count >= 2 && iov[0].iov_len >= sizeof(*h) &&
	    h->unique == m->init_unique) {
		m->init_unique = 0;
		if (h->error == 0 && m->killpriv_offered &&
		    iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t)) {
			((struct fuse_init_out *)iov[1].iov_base)->flags |= FUSE_HANDLE_KILLPRIV_V2;
			m->killpriv_v2 = true;
		}
	}
	return writev(fd, iov, count);
}

/* Replies spliced from data files stay spliced (without it libfuse copies them through a
 * buffer). Requests are never spliced in: every one must pass io_read. */
static ssize_t
io_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len, unsigned flags,
	       void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

static int
set_io(struct eos_view_mount *m)
{
	static const struct fuse_custom_io io = { .read = io_read,
						  .writev = io_writev,
						  .splice_send = io_splice_send };

	return fuse_session_custom_io(m->se, &io, fuse_session_fd(m->se)) == 0 ? 0 : -ENOMEM;
}

static int
set_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int
eos_view_mount(struct eos_view *v, const char *mountpoint,
	       const struct eos_view_mount_options *opts, struct eos_view_mount **ret,
	       struct eos_error *err)
{
	const struct eos_view_mount_options none = { 0 }, *o = opts ? opts : &none;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct eos_view_mount *m;
	int r = eos_view_mountpoint_check(mountpoint, err);

	r = r ?: check_fuse_opts(o->fuse_opts, err);
	if (r < 0)
		return r;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->mountpoint = strdup(mountpoint)) || build_args(v, o->fuse_opts, &args) < 0) {
		fuse_opt_free_args(&args);
		eos_view_mount_free(m);
		return eos_error_set(err, -ENOMEM, "out of memory");
	}
	m->view = v;
	eos_owners_init(v, o->owners, &m->owners);
	m->se = fuse_session_new(&args, &eos_fs_ops, sizeof(eos_fs_ops), m);
	fuse_opt_free_args(&args);
	if (!m->se) {
		eos_view_mount_free(m);
		return eos_error_set(err, -EINVAL, "mount '%s': bad FUSE options '%s'", mountpoint,
				     o->fuse_opts ? o->fuse_opts : "");
	}
	if (fuse_session_mount(m->se, mountpoint) != 0) {
		eos_view_mount_free(m);
		return eos_error_set(err, -EIO, "mount '%s' failed (see the message above)",
				     mountpoint);
	}
	m->mounted = true;
	m->host_served = o->host_served;
	if (set_io(m) < 0) {
		eos_view_mount_free(m);
		return eos_error_set(err, -ENOMEM, "out of memory");
	}
	if (m->host_served && set_nonblocking(fuse_session_fd(m->se)) < 0) {
		r = eos_neg_errno();
		eos_view_mount_free(m);
		return eos_error_set(err, r, "mount '%s': %s", mountpoint, strerror(-r));
	}
	r = mounts_add(v, m);
	if (r < 0) {
		eos_view_mount_free(m);
		return eos_error_set(err, r, "out of memory");
	}
	*ret = m;
	return 0;
}

int
eos_view_mount_serve(struct eos_view_mount *m, struct eos_error *err)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int r;

	if (!cfg)
		return eos_error_set(err, -ENOMEM, "out of memory");
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	/* idle workers stay: with clone_fd each new worker costs an open of /dev/fuse */
	fuse_loop_cfg_set_max_threads(cfg, WORKERS);
	fuse_loop_cfg_set_idle_threads(cfg, WORKERS);
	r = fuse_session_loop_mt(m->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	if (r < 0)
		return eos_error_set(err, r, "serving '%s': %s", m->mountpoint, strerror(-r));
	return 0;
}

void
eos_view_mount_stop(struct eos_view_mount *m)
{
	fuse_session_exit(m->se);
	if (m->mounted) {
		fuse_session_unmount(m->se);
		m->mounted = false;
	}
}

void
eos_view_mount_free(struct eos_view_mount *m)
{
	if (!m)
		return;
	if (m->view)
		mounts_remove(m->view, m);
	if (m->se) {
		if (m->mounted)
			fuse_session_unmount(m->se);
		fuse_session_destroy(m->se);
	}
	free(m->mountpoint);
	free(m);
}

/* --- serving from a host's threads --------------------------------------------------------------
 */

struct eos_view_rbuf {
	struct fuse_buf fbuf;
	size_t cap;
};

int
eos_view_rbuf_new(struct eos_view_rbuf **ret)
{
	struct eos_view_rbuf *b = calloc(1, sizeof(*b));
	long page = sysconf(_SC_PAGESIZE);

	if (!b)
		return -ENOMEM;
	b->cap = (size_t)(page > 0 ? page : 4096) * RBUF_PAGES + RBUF_HEADER;
	b->fbuf.mem = malloc(b->cap);
	if (!b->fbuf.mem) {
		free(b);
		return -ENOMEM;
	}
	*ret = b;
	return 0;
}

void
eos_view_rbuf_free(struct eos_view_rbuf *b)
{
	if (!b)
		return;
	free(b->fbuf.mem);
	free(b);
}

int
eos_view_mount_fd(const struct eos_view_mount *m)
{
	return m->se ? fuse_session_fd(m->se) : -1;
}

int
eos_view_mount_receive(struct eos_view_mount *m, struct eos_view_rbuf *b)
{
	int r;

	assert(m->host_served);
	b->fbuf.size = b->cap;
	b->fbuf.flags = 0;
	r = fuse_session_receive_buf(m->se, &b->fbuf);
	if (r > 0)
		return 1;
	if (r == 0 || fuse_session_exited(m->se))
		return -ENODEV; /* unmounted (or the connection aborted), or stopped */
	return r == -EAGAIN || r == -EINTR ? 0 : r;
}

void
eos_view_mount_process(struct eos_view_mount *m, struct eos_view_rbuf *b)
{
	fuse_session_process_buf(m->se, &b->fbuf);
}
