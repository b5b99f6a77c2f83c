/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the file behind a persistent region, as the agent must know
 * it before it persists or places a commit.
 *
 * Every region of a file (same st_dev and st_ino, on any domain, key or
 * mapping) shares one record: a descriptor pmemverbs opened itself and a
 * count of the persist errors seen on the file.
 *
 * Linux reports a writeback error once per open file description (errseq):
 * the first msync through a mapping of the file gets it, later ones find
 * the pages clean and succeed, although the data never reached the disk.
 * So an error, once seen by any persist of the file (msync, or the record's
 * own descriptor, checked after every msync), is remembered: every later
 * commit on a region registered before it fails (PMV_ERR_PERSIST, FI_EIO:
 * durability unknown) until the application registers the region again,
 * whose registration starts clean.
 *
 * A file truncated under a live registration has lost the pages past its
 * end: a store or a cache flush there raises SIGBUS.  Each persist and
 * placement first checks that its range lies within the file's current
 * size, and fails the commit if not.  A truncation between that check and
 * the store is not caught (fi_pmemverbs(7)).
 */

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/pmv_target.h"

struct pmv_file {
	struct pmv_file *next;
	dev_t dev;
	ino_t ino;
	int fd;            /* pmemverbs's own open file description */
	bool regular;      /* a regular file: it has a size to check */
	unsigned refs;     /* regions of the file (under pmv_files_lock) */
	uint64_t errors;   /* persist errors seen on the file (atomic) */
};

static pthread_mutex_t pmv_files_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pmv_file *pmv_files;

/* The record of (dev, ino), with a reference; NULL if none.  Locked. */
static struct pmv_file *pmv_file_find(dev_t dev, ino_t ino)
{
	struct pmv_file *f;

	for (f = pmv_files; f; f = f->next)
		if (f->dev == dev && f->ino == ino)
			break;
	if (f)
		f->refs++;
	return f;
}

/*
 * Ties p to the record of the file fd opens, made from fd if it is the
 * first region of that file; fd is kept by the record or closed.
 */
void pmv_file_attach(struct pmv_persistence *p, int fd)
{
	struct pmv_file *f;
	struct stat st;

	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	pmv_lock(&pmv_files_lock, PMV_LOCK_FILES);
	f = pmv_file_find(st.st_dev, st.st_ino);
	if (!f && (f = calloc(1, sizeof(*f)))) {
		*f = (struct pmv_file) { .next = pmv_files, .dev = st.st_dev,
					 .ino = st.st_ino, .fd = fd,
					 .regular = S_ISREG(st.st_mode),
					 .refs = 1 };
		pmv_files = f;
		fd = -1;
	}
	pmv_unlock(&pmv_files_lock, PMV_LOCK_FILES);
	if (fd >= 0)
		close(fd);
	p->file = f;
	p->file_errors = f ? __atomic_load_n(&f->errors, __ATOMIC_ACQUIRE) : 0;
}

/* Drops p's reference; the last region of a file closes its record. */
void pmv_file_detach(struct pmv_persistence *p)
{
	struct pmv_file *f = p->file, **pp;

	if (!f)
		return;
	p->file = NULL;
	pmv_lock(&pmv_files_lock, PMV_LOCK_FILES);
	if (--f->refs) {
		f = NULL;
	} else {
		for (pp = &pmv_files; *pp != f; pp = &(*pp)->next)
			;
		*pp = f->next;
	}
	pmv_unlock(&pmv_files_lock, PMV_LOCK_FILES);
	if (f) {
		close(f->fd);
		free(f);
	}
}

/* Where addr lies in the region's file. */
static uint64_t pmv_file_offset(const struct pmv_persistence *p,
				const void *addr)
{
	return p->map_offset + ((uintptr_t) addr - p->map_start);
}

/*
 * 0 if [addr, addr + len) lies within the file's size, else -FI_EIO.  The
 * size is lseek(SEEK_END) on the record's own descriptor, whose offset
 * nothing else uses: a third of fstat's cost, on every commit's path.
 */
static int pmv_file_size_check(const struct pmv_persistence *p,
			       const void *addr, size_t len)
{
	uint64_t end = pmv_file_offset(p, addr) + len;
	off_t size;

	if (!p->file->regular)
		return 0;
	size = lseek(p->file->fd, 0, SEEK_END);
	if (size < 0 || end <= (uint64_t) size)
		return 0;
	PMV_WARN(FI_LOG_MR, "the region's file was truncated to %lld bytes "
		 "under a live registration: the commit's range (up to file "
		 "offset %llu) is gone, its durability unknown; the commit "
		 "fails with FI_EIO. Close the region before truncating its "
		 "file\n", (long long) size, (unsigned long long) end);
	return -FI_EIO;
}

/*
 * Before persisting or placing [addr, addr + len) of a region: -FI_EIO if
 * a persist of its file failed since the region was registered, or the
 * range lies past the file's end; else 0.
 */
int pmv_file_check(const struct pmv_persistence *p, const void *addr,
		   size_t len)
{
	if (!p->file)
		return 0;
	if (__atomic_load_n(&p->file->errors, __ATOMIC_ACQUIRE) !=
	    p->file_errors) {
		PMV_WARN(FI_LOG_MR, "a persist (msync or writeback) of the "
			 "region's file failed since it was registered: data "
			 "written to it before may be lost, its durability "
			 "unknown; the commit fails with FI_EIO. Register the "
			 "region again and rewrite it\n");
		return -FI_EIO;
	}
	return pmv_file_size_check(p, addr, len);
}

/*
 * After an msync of a region that succeeded: a writeback error of the file
 * that another descriptor's fsync, or an msync through the same mapping,
 * already consumed shows once on the record's own descriptor; -FI_EIO.
 */
int pmv_file_wb_check(const struct pmv_persistence *p, const void *addr,
		      size_t len)
{
	if (!p->file || !p->file->regular ||
	    !sync_file_range(p->file->fd, (off_t) pmv_file_offset(p, addr),
			     (off_t) len, SYNC_FILE_RANGE_WAIT_AFTER))
		return 0;
	PMV_WARN(FI_LOG_MR, "the region's file reported a writeback error "
		 "(%s): data written to it may be lost, its durability "
		 "unknown; the commit fails with FI_EIO\n", strerror(errno));
	return -FI_EIO;
}

/* Remembers that a persist of p's file failed: its regions' commits fail. */
void pmv_file_failed(const struct pmv_persistence *p)
{
	if (p->file)
		__atomic_add_fetch(&p->file->errors, 1, __ATOMIC_ACQ_REL);
}
