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
 * an fsync of the application's descriptor, or an msync through its
 * mapping, gets it, and later ones find the pages clean and succeed,
 * although the data never reached the disk.  So pmemverbs persists a PAGE
 * region through a mapping of its own (the view, with no access) of the
 * record's descriptor, which nothing else syncs: msync(2) syncs the file
 * range through the mapping's file (vfs_fsync_range), whichever mapping
 * dirtied the pages, and reports to that file every error since its last
 * sync.
 * An error, once seen, is remembered: every later commit on a region
 * registered before it fails (PMV_ERR_PERSIST, FI_EIO: durability
 * unknown) until the application registers the region again, whose
 * registration starts clean.  A clean start is not enough: where the
 * page that failed stays in memory, ext4 writes its later stores to the
 * block but leaves the block's extent unwritten, so msync returns 0 and a
 * read past the cache, or after a remount, sees zeros.  So from its first
 * failure on, a file's every persist is read back past the page cache and
 * written again where it differs (pmv_file_read_back), for the process's
 * life (the record stays when its last region closes).
 *
 * A file truncated under a live registration has lost the pages past its
 * end: a store or a cache flush there raises SIGBUS.  Each persist and
 * placement first checks that its range lies within the file's current
 * size, and fails the commit if not.  A truncation between that check and
 * the store is not caught (fi_pmemverbs(7)).
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/pmv_target.h"

/* Under valgrind, a view's msync must not read as a use of memory with no
 * access (memcheck checks msync's range is addressable): the view is
 * marked so at its mmap.  Without the header, a no-op. */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define PMV_VIEW_FOR_MEMCHECK(addr, len) \
	((void) VALGRIND_MAKE_MEM_DEFINED(addr, len))
#endif
#endif
#ifndef PMV_VIEW_FOR_MEMCHECK
#define PMV_VIEW_FOR_MEMCHECK(addr, len) ((void) 0)
#endif

struct pmv_file {
	struct pmv_file *next;
	dev_t dev;
	ino_t ino;
	int fd;            /* pmemverbs's own open file description */
	bool regular;      /* a regular file: it has a size to check */
	uint64_t blksize;  /* its st_blksize: a huge page on hugetlbfs */
	unsigned refs;     /* regions of the file (under pmv_files_lock) */
	uint64_t errors;   /* persist errors seen on the file (atomic) */
	bool read_back;    /* a persist failed once: every later one is read
			    * back (atomic; the record then stays) */
	bool direct;       /* fd has O_DIRECT (atomic) */
	struct pmv_view *views; /* (under pmv_files_lock) */
};

static pthread_mutex_t pmv_files_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pmv_file *pmv_files;

static void pmv_file_view_unmap(struct pmv_persistence *p);

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
					 .blksize = (uint64_t) st.st_blksize,
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
	pmv_file_view_unmap(p);
	p->file = NULL;
	pmv_lock(&pmv_files_lock, PMV_LOCK_FILES);
	if (--f->refs || __atomic_load_n(&f->read_back, __ATOMIC_ACQUIRE)) {
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
 * The alignment of a view of f: its block size where that is a larger
 * power of two than a page (hugetlbfs maps only whole huge pages), else a
 * page.
 */
static uint64_t pmv_file_view_align(const struct pmv_file *f, uint64_t page)
{
	uint64_t b = f->blksize;

	return b > page && !(b & (b - 1)) ? b : page;
}

/* A view of f holding [off, end), with a reference; NULL if none.  Locked. */
static struct pmv_view *pmv_file_view_find(struct pmv_file *f, uint64_t off,
					   uint64_t end)
{
	struct pmv_view *v;

	for (v = f->views; v; v = v->next)
		if (v->offset <= off && end <= v->offset + v->len)
			break;
	if (v)
		v->refs++;
	return v;
}

/*
 * Maps a view of [start, end) of f.  msync needs no access to its pages,
 * so it has none: under mlockall(MCL_FUTURE) a readable view would be
 * faulted in (page tables over the range, a read of each page not in
 * memory) and locked; this one maps no page, and munlock takes it out of
 * the locked count.  NULL if it cannot be mapped.
 */
static struct pmv_view *pmv_file_view_new(struct pmv_file *f, uint64_t start,
					  uint64_t end)
{
	struct pmv_view *v = malloc(sizeof(*v));
	void *addr = v ? mmap(NULL, end - start, PROT_NONE, MAP_SHARED,
			      f->fd, (off_t) start) : MAP_FAILED;

	if (addr == MAP_FAILED) {
		PMV_WARN(FI_LOG_MR, "fi_mr_reg: cannot map the region's file "
			 "for its persists (%s: %s); free memory, address "
			 "space or mappings (vm.max_map_count), or under "
			 "mlockall(MCL_FUTURE) raise RLIMIT_MEMLOCK by the "
			 "mapping's size, and register again\n",
			 v ? "mmap" : "malloc", strerror(v ? errno : ENOMEM));
		free(v);
		return NULL;
	}
	(void) munlock(addr, end - start); /* unlocked unless MCL_FUTURE */
	PMV_VIEW_FOR_MEMCHECK(addr, end - start);
	*v = (struct pmv_view) { .addr = addr, .offset = start,
				 .len = end - start, .refs = 1 };
	return v;
}

/* A view of p's file holding [off, end), with a reference; NULL if none. */
static struct pmv_view *pmv_file_view_share(const struct pmv_persistence *p,
					    uint64_t off, uint64_t end)
{
	struct pmv_view *v;

	pmv_lock(&pmv_files_lock, PMV_LOCK_FILES);
	v = pmv_file_view_find(p->file, off, end);
	pmv_unlock(&pmv_files_lock, PMV_LOCK_FILES);
	return v;
}

/*
 * Maps a new view for [off, end) of p's region: of the application's
 * whole mapping (p->map_offset, p->map_len) and the region, aligned for
 * the file.  NULL if it cannot be mapped.
 */
static struct pmv_view *pmv_file_view_new_for(const struct pmv_persistence *p,
					      uint64_t off, uint64_t end)
{
	uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
	uint64_t align = pmv_file_view_align(p->file, page);
	uint64_t map_end = p->map_offset + p->map_len;
	uint64_t start = off < p->map_offset ? off : p->map_offset;

	if (end < map_end)
		end = map_end;
	return pmv_file_view_new(p->file, start & ~(align - 1),
				 (end + align - 1) & ~(align - 1));
}

/*
 * Gives a PAGE region on a regular file (none for other regions) the view
 * of its file that holds [addr, addr + len): one that another region's
 * registration made, or a new one (mapped with no lock held).  0, or
 * -FI_ENOMEM if it cannot be mapped.
 */
int pmv_file_view_map(struct pmv_persistence *p, const void *addr,
		      size_t len)
{
	uint64_t off, end;
	struct pmv_view *mine;

	if (p->kind != PMV_PERSIST_MSYNC || !p->file || !p->file->regular)
		return 0;
	off = pmv_file_offset(p, addr);
	end = off + len;
	if ((p->view = pmv_file_view_share(p, off, end)))
		return 0;
	if (!(mine = pmv_file_view_new_for(p, off, end)))
		return -FI_ENOMEM;
	pmv_lock(&pmv_files_lock, PMV_LOCK_FILES);
	p->view = pmv_file_view_find(p->file, off, end); /* another's? */
	if (!p->view) {
		mine->next = p->file->views;
		p->file->views = p->view = mine;
		mine = NULL;
	}
	pmv_unlock(&pmv_files_lock, PMV_LOCK_FILES);
	if (mine) {
		munmap(mine->addr, mine->len);
		free(mine);
	}
	return 0;
}

/* Drops p's reference to its view; the last region unmaps it. */
static void pmv_file_view_unmap(struct pmv_persistence *p)
{
	struct pmv_view *v = p->view, **pp;

	if (!v)
		return;
	p->view = NULL;
	pmv_lock(&pmv_files_lock, PMV_LOCK_FILES);
	if (--v->refs) {
		v = NULL;
	} else {
		for (pp = &p->file->views; *pp != v; pp = &(*pp)->next)
			;
		*pp = v->next;
	}
	pmv_unlock(&pmv_files_lock, PMV_LOCK_FILES);
	if (v) {
		munmap(v->addr, v->len);
		free(v);
	}
}

/*
 * Persists [addr, addr + len) of a region through its view: 0, -1 with
 * errno if msync failed (a writeback error of the file since the view's
 * last sync included), or 1 if the region has no view (the caller
 * msyncs).
 */
int pmv_file_view_sync(const struct pmv_persistence *p, const void *addr,
		       size_t len)
{
	uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
	uint64_t off = pmv_file_offset(p, addr);
	uint64_t start = off & ~(page - 1);

	if (!p->view)
		return 1;
	return msync(p->view->addr + (start - p->view->offset),
		     off + len - start, MS_SYNC) ? -1 : 0;
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
 * Remembers that a persist of p's file failed: its regions' commits fail;
 * if its writeback failed, every later persist of the file is read back
 * (pmv_file_read_back).
 */
void pmv_file_failed(const struct pmv_persistence *p, bool writeback)
{
	if (!p->file)
		return;
	if (writeback)
		__atomic_store_n(&p->file->read_back, true, __ATOMIC_RELEASE);
	__atomic_add_fetch(&p->file->errors, 1, __ATOMIC_ACQ_REL);
}

/*
 * Gives f's descriptor O_DIRECT (once): its reads and writes go past the
 * page cache; its views (mmap) and lseek are unchanged.  0, or -1 with
 * errno (a file system without direct I/O).
 */
static int pmv_file_direct(struct pmv_file *f)
{
	int flags;

	if (__atomic_load_n(&f->direct, __ATOMIC_ACQUIRE))
		return 0;
	flags = fcntl(f->fd, F_GETFL);
	if (flags < 0 || fcntl(f->fd, F_SETFL, flags | O_DIRECT))
		return -1;
	__atomic_store_n(&f->direct, true, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Reads the n bytes at file offset off into buf (O_DIRECT) and compares
 * its bytes [skip, skip + len) with want's: 0 if the same, 1 if they
 * differ, -1 if they could not be read.  *got: the bytes read (fewer at
 * the file's end).
 */
static int pmv_file_same(struct pmv_file *f, void *buf, size_t n,
			 uint64_t off, const uint8_t *want, size_t skip,
			 size_t len, size_t *got)
{
	ssize_t r = pread(f->fd, buf, n, (off_t) off);

	if (r < 0 || (size_t) r < skip + len)
		return -1;
	*got = (size_t) r;
	return memcmp((uint8_t *) buf + skip, want, len) ? 1 : 0;
}

/*
 * Writes a snapshot of mem's n bytes at file offset off with O_DIRECT
 * (from buf), syncs the file and reads them back (into check): 0 if the
 * device then holds the snapshot, 1 if it holds other bytes, -1 if the
 * I/O failed.  Compared with the snapshot, not with mem, which a later
 * write may have changed meanwhile.  (A store into the page while it is
 * written makes the kernel write it through its cache: the device may
 * then hold newer bytes, and the commit fails, durability unknown.)
 */
static int pmv_file_rewrite(struct pmv_file *f, void *buf, void *check,
			    const void *mem, size_t n, uint64_t off)
{
	size_t got;

	memcpy(buf, mem, n);
	if (pwrite(f->fd, buf, n, (off_t) off) != (ssize_t) n ||
	    fdatasync(f->fd))
		return -1;
	return pmv_file_same(f, check, n, off, buf, 0, n, &got);
}

/*
 * After [addr, addr + len) of a region was persisted (msync returned 0):
 * if its file failed a persist once, reads the range's pages back past
 * the page cache and, where the range differs from memory, writes a
 * snapshot of the pages with O_DIRECT (which converts an unwritten
 * extent), syncs and reads it back again.  0 if the device holds the
 * range's bytes, else -FI_EIO: durability unknown (an I/O error, no
 * direct I/O, a store into those pages while they were written).
 */
int pmv_file_read_back(const struct pmv_persistence *p, const void *addr,
		       size_t len)
{
	struct pmv_file *f = p->file;
	uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
	uint64_t off, start;
	size_t n, got = 0;
	void *buf = NULL;
	int ret = -1;

	if (!f || !__atomic_load_n(&f->read_back, __ATOMIC_ACQUIRE))
		return 0;
	off = pmv_file_offset(p, addr);
	start = off & ~(page - 1);
	n = (size_t) (((off + len + page - 1) & ~(page - 1)) - start);
	addr = (const uint8_t *) addr - (off - start);
	if (!pmv_file_direct(f) && !pmv_fault(PMV_FAULT_ALLOC) &&
	    !posix_memalign(&buf, page, 2 * n))
		ret = pmv_file_same(f, buf, n, start,
				    (const uint8_t *) addr + (off - start),
				    off - start, len, &got);
	if (ret > 0 && got == n) /* a whole number of pages: write them */
		ret = pmv_file_rewrite(f, buf, (uint8_t *) buf + n, addr, n,
				       start);
	free(buf);
	if (!ret)
		return 0;
	PMV_WARN(FI_LOG_MR, "a persist of a file whose writeback failed before "
		 "succeeded, but the device does not hold its bytes (read "
		 "back with O_DIRECT: %s); the commit fails with FI_EIO. Write "
		 "the range again and commit, or move the data to another "
		 "file\n", ret > 0 ? "they differ" : strerror(errno));
	return -FI_EIO;
}
