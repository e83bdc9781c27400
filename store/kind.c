/* SPDX-License-Identifier: MIT */
/* store/kind: what each entry kind is on a host (eos_kind_* in store/store.h). */
#include <sys/stat.h>

#include "store/store.h"

enum eos_kind
eos_kind_of_mode(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return EOS_KIND_DIR;
	case S_IFREG:
		return EOS_KIND_FILE;
	case S_IFLNK:
		return EOS_KIND_SYMLINK;
	case S_IFIFO:
		return EOS_KIND_FIFO;
	case S_IFCHR:
		return EOS_KIND_CHR;
	case S_IFBLK:
		return EOS_KIND_BLK;
	default:
		return EOS_KIND_NONE;
	}
}

uint32_t
eos_kind_mode(enum eos_kind k)
{
	switch (k) {
	case EOS_KIND_DIR:
		return S_IFDIR;
	case EOS_KIND_FILE:
		return S_IFREG;
	case EOS_KIND_SYMLINK:
		return S_IFLNK;
	case EOS_KIND_FIFO:
		return S_IFIFO;
	case EOS_KIND_CHR:
		return S_IFCHR;
	case EOS_KIND_BLK:
		return S_IFBLK;
	case EOS_KIND_NONE:
	case EOS_KIND_WHITEOUT:
		break;
	}
	return 0;
}

const char *
eos_kind_name(enum eos_kind k)
{
	switch (k) {
	case EOS_KIND_DIR:
		return "directory";
	case EOS_KIND_FILE:
		return "file";
	case EOS_KIND_SYMLINK:
		return "symlink";
	case EOS_KIND_FIFO:
		return "fifo";
	case EOS_KIND_CHR:
		return "character device";
	case EOS_KIND_BLK:
		return "block device";
	case EOS_KIND_NONE:
	case EOS_KIND_WHITEOUT:
		break;
	}
	return "nothing";
}

bool
eos_kind_has_rdev(enum eos_kind k)
{
	return k == EOS_KIND_CHR || k == EOS_KIND_BLK;
}
