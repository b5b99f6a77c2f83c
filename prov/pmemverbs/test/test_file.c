/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: what the agent must know of a region's file before it
 * persists or places a commit (target/pmv_file.c): a file truncated under
 * a live registration, and a writeback error that another persist
 * consumed (Linux reports it once per open file), on a real ext4 file
 * system whose loop device runs out of space, in a private mount
 * namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "target/pmv_target.h"

#define LEN (64 * 1024)
#define PAGE 4096

/* Maps LEN bytes of a new file at path (unlinked at once if unlink_it). */
static uint8_t *map_file(const char *path, int *fd_out)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	void *map;

	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(ftruncate(fd, LEN), 0);
	map = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(map, MAP_FAILED);
	*fd_out = fd;
	return map;
}

/*
 * A file truncated under a registration: persisting or placing a range
 * past its new end fails (-FI_EIO) where it raised SIGBUS (the dirtying
 * store of PAGE, the cache flush of DMP); a range still inside it works.
 */
static void check_truncated(const char *granularity)
{
	char path[] = "/var/tmp/pmv_trunc_XXXXXX";
	struct pmv_persistence p;
	uint8_t src[64] = { 1 }, *map;
	int fd;

	setenv("PMEM2_FORCE_GRANULARITY", granularity, 1);
	close(mkstemp(path));
	map = map_file(path, &fd);
	unlink(path);
	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	memset(map, 0x5a, 2 * PAGE);
	cr_assert_eq(pmv_persist(&p, map + PAGE, PAGE), 0);
	cr_assert_eq(ftruncate(fd, PAGE + 100), 0);
	cr_assert_eq(pmv_persist(&p, map + 3 * PAGE, 64), -FI_EIO,
		     "%s: a persist past the file's end did not fail",
		     granularity);
	cr_assert_eq(pmv_persist(&p, map + PAGE, PAGE), -FI_EIO,
		     "%s: a persist across the file's end did not fail",
		     granularity);
	cr_assert_eq(pmv_place(&p, map + 5 * PAGE, src, sizeof(src), false),
		     -FI_EIO, "%s: a placement past the file's end did not "
		     "fail", granularity);
	cr_assert_eq(pmv_persist(&p, map + PAGE, 100), 0,
		     "%s: a range still in the file failed", granularity);
	cr_assert_eq(pmv_place(&p, map + 8, src, sizeof(src), true), 0);
	pmv_persistence_release(&p);
	munmap(map, LEN);
	close(fd);
}

Test(file, page_commits_past_a_truncated_end_fail)
{
	check_truncated("page");
}

Test(file, dmp_commits_past_a_truncated_end_fail)
{
	check_truncated("cache_line");
}

Test(file, mhp_commits_past_a_truncated_end_fail)
{
	check_truncated("byte");
}

/*
 * A private mount namespace holding an ext4 file system on a loop device
 * whose image lies on a small tmpfs: once the tmpfs is full, the loop
 * device's writes to the image's holes fail, so writeback to new blocks of
 * the file system fails while the file system itself has room.
 */
struct wb_fs {
	char dir[32];  /* the temporary directory, in the host's /tmp */
	char tmp[48];  /* the tmpfs holding the image */
	char mnt[48];  /* the ext4 mount */
	char path[64]; /* the file mapped */
};

/* Runs a shell command of the set-up; fails the test if it fails. */
static void wb_run(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "set-up failed: %s", cmd);
}

/* True if a mount of this namespace is shared (mountinfo's "shared:"
 * field): a mount made here could then reach other namespaces. */
static bool wb_some_mount_shared(void)
{
	char line[1024];
	bool shared = false;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	cr_assert_not_null(f, "/proc/self/mountinfo: %s", strerror(errno));
	while (!shared && fgets(line, sizeof(line), f))
		shared = strstr(line, " shared:") != NULL;
	fclose(f);
	return shared;
}

/*
 * Makes this thread's mounts private.  In a chroot (the Debian 13 pass) /
 * is no mount point and cannot be made private (EINVAL); there the
 * namespace must already have no shared mount (the pass makes its own
 * private), or the test fails rather than mount where it could leak.
 */
static void wb_mounts_private(void)
{
	if (!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return;
	cr_assert_eq(errno, EINVAL, "making / private: %s", strerror(errno));
	cr_assert(!wb_some_mount_shared(), "/ is no mount point (a chroot?) "
		  "and a mount of this namespace is shared: the test's mounts "
		  "could leak out");
}

/* Makes the file system, or skips where loop devices cannot be had. */
static void wb_fs_setup(struct wb_fs *fs)
{
	if (geteuid())
		cr_skip_test("needs root: a loop device and mounts");
	if (system("losetup -f >/dev/null 2>&1"))
		cr_skip_test("no free loop device (losetup -f failed)");
	if (system("command -v mkfs.ext4 >/dev/null 2>&1"))
		cr_skip_test("no mkfs.ext4 (e2fsprogs) to make the file system");
	if (unshare(CLONE_NEWNS))
		cr_skip_test("unshare(CLONE_NEWNS): %s", strerror(errno));
	wb_mounts_private();
	strcpy(fs->dir, "/tmp/pmv_wberr_XXXXXX");
	cr_assert_not_null(mkdtemp(fs->dir));
	snprintf(fs->tmp, sizeof(fs->tmp), "%s/t", fs->dir);
	snprintf(fs->mnt, sizeof(fs->mnt), "%s/m", fs->dir);
	snprintf(fs->path, sizeof(fs->path), "%s/m/f", fs->dir);
	cr_assert_eq(mkdir(fs->tmp, 0700) | mkdir(fs->mnt, 0700), 0);
	cr_assert_eq(mount("tmpfs", fs->tmp, "tmpfs", 0, "size=16m"), 0,
		     "mount tmpfs: %s", strerror(errno));
	wb_run("truncate -s 32M %s/img && mkfs.ext4 -q -F -O ^has_journal "
	       "-E lazy_itable_init=0 %s/img >/dev/null 2>&1 && "
	       "mount -o loop %s/img %s", fs->tmp, fs->tmp, fs->tmp, fs->mnt);
	/* initialise and write the block group's metadata now, while there
	 * is room (a file kept, so that its blocks are not reused) */
	wb_run("dd if=/dev/zero of=%s/kept bs=64k count=16 conv=fsync "
	       "status=none", fs->mnt);
}

/* Fills the tmpfs under the image: writes to the image's holes fail. */
static void wb_fs_fill(struct wb_fs *fs, bool full)
{
	static char chunk[1 << 16];
	char path[64];
	int fd, i;

	snprintf(path, sizeof(path), "%s/fill", fs->tmp);
	if (!full) {
		cr_assert_eq(unlink(path), 0);
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	for (i = 0; i < 1024 && write(fd, chunk, sizeof(chunk)) > 0; i++)
		;
	cr_assert_lt(i, 1024, "the tmpfs did not fill up");
	close(fd);
}

static struct wb_fs g_fs;

/* Unmounts and removes what wb_fs_setup made (also after a failure). */
static void wb_fs_teardown(void)
{
	struct wb_fs *fs = &g_fs;

	if (!fs->dir[0])
		return;
	umount2(fs->mnt, MNT_DETACH); /* the loop device clears itself */
	umount2(fs->tmp, MNT_DETACH);
	rmdir(fs->mnt);
	rmdir(fs->tmp);
	rmdir(fs->dir);
}

/* The first byte of the file on disk (O_DIRECT, past the page cache). */
static int wb_byte_on_disk(const char *path)
{
	void *buf;
	int fd = open(path, O_RDONLY | O_DIRECT), byte;

	cr_assert_geq(fd, 0);
	cr_assert_eq(posix_memalign(&buf, PAGE, PAGE), 0);
	cr_assert_eq(pread(fd, buf, PAGE, 0), PAGE);
	byte = *(uint8_t *) buf;
	free(buf);
	close(fd);
	return byte;
}

/*
 * One file mapped once and registered as two keys A and B (two regions of
 * the same mapping).  A plain write to A's first page is placed; the
 * file's writeback fails (the device is full), and the error goes to
 * another persist first: B's commit (by_b), or the application's own fsync
 * on the descriptor it mapped.  Space comes back and the clean page is
 * reclaimed.  A pure flush of A must fail: its write is not on disk, and
 * a dirtying store and msync would now write the page read back (zeros).
 * A new registration starts clean; the old one stays failed.
 */
static void check_wb_error_remembered(bool by_b)
{
	struct pmv_persistence a, b, a2;
	struct wb_fs *fs = &g_fs;
	uint8_t *map;
	int fd, fd2, ret;

	unsetenv("PMEM2_FORCE_GRANULARITY");
	wb_fs_setup(fs);
	map = map_file(fs->path, &fd);
	cr_assert_eq(fsync(fd), 0);
	cr_assert_eq(pmv_persistence_detect(map, LEN, &a), 0);
	cr_assert_eq(pmv_persistence_detect(map, LEN, &b), 0);
	cr_assert_eq(a.profile, FI_PMEM_PROFILE_PAGE);
	memset(map, 0x5a, PAGE);
	wb_fs_fill(fs, true);
	if (by_b) {
		fd2 = open(fs->path, O_RDWR);
		cr_assert_neq(sync_file_range(fd2, 0, LEN,
			      SYNC_FILE_RANGE_WAIT_BEFORE |
			      SYNC_FILE_RANGE_WRITE |
			      SYNC_FILE_RANGE_WAIT_AFTER), 0,
			      "set-up: writeback to a full device succeeded");
		close(fd2);
		cr_assert_eq(pmv_persist(&b, map + PAGE, 64), -FI_EIO,
			     "set-up: B's msync did not report the error");
	} else {
		cr_assert_neq(fsync(fd), 0,
			      "set-up: writeback to a full device succeeded");
	}
	wb_fs_fill(fs, false);
	cr_assert_eq(madvise(map, PAGE, MADV_PAGEOUT), 0);
	ret = pmv_persist(&a, map, PAGE);
	cr_assert_eq(ret, -FI_EIO, "a pure flush of A %s after its "
		     "writeback failed (the error went to %s); on disk its "
		     "first byte is %#x, written %#x", ret ? "failed oddly" :
		     "succeeded", by_b ? "B's commit" : "the application's "
		     "fsync", wb_byte_on_disk(fs->path), 0x5a);
	cr_assert_eq(pmv_persist(&b, map + PAGE, 64), -FI_EIO);
	cr_assert_eq(pmv_persistence_detect(map, LEN, &a2), 0);
	memset(map, 0x5a, PAGE);
	cr_assert_eq(pmv_persist(&a2, map, PAGE), 0,
		     "a new registration did not start clean");
	cr_assert_eq(wb_byte_on_disk(fs->path), 0x5a);
	cr_assert_eq(pmv_persist(&a, map, PAGE), -FI_EIO);
	pmv_persistence_release(&a2);
	pmv_persistence_release(&b);
	pmv_persistence_release(&a);
	munmap(map, LEN);
	close(fd);
}

Test(file, a_writeback_error_consumed_by_another_key_is_remembered,
     .timeout = 60, .fini = wb_fs_teardown)
{
	check_wb_error_remembered(true);
}

Test(file, a_writeback_error_consumed_by_an_fsync_is_remembered,
     .timeout = 60, .fini = wb_fs_teardown)
{
	check_wb_error_remembered(false);
}

static bool g_flip_stop;

/* Stores into the byte at arg until g_flip_stop, as a core's receive of
 * later writes does. */
static void *flip_byte(void *arg)
{
	uint8_t *b = arg;

	while (!__atomic_load_n(&g_flip_stop, __ATOMIC_RELAXED))
		__atomic_add_fetch(b, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * From a file's first failed writeback on, each persist is read back past
 * the page cache (pmv_file_read_back), under later registrations too.
 * Stores that land meanwhile at offset at of the page, beside the
 * committed range (the application's, or a write to the region's next
 * bytes), change the page but not the range: the commits succeed.
 * (Compared page by page with memory, they failed.)
 */
static void check_read_back_under_stores(size_t at)
{
	char path[] = "/var/tmp/pmv_rb_XXXXXX";
	struct pmv_persistence p;
	pthread_t flipper;
	uint8_t *map;
	int fd, ret = 0, i;

	setenv("PMEM2_FORCE_GRANULARITY", "page", 1);
	close(mkstemp(path));
	map = map_file(path, &fd);
	unlink(path);
	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	memset(map, 0x5a, PAGE);
	cr_assert_eq(pmv_persist(&p, map, PAGE), 0);
	pmv_file_failed(&p, true);
	/* registered again: a new registration starts clean, read back */
	pmv_persistence_release(&p);
	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	g_flip_stop = false;
	cr_assert_eq(pthread_create(&flipper, NULL, flip_byte, map + at), 0);
	for (i = 0; i < 50 && !ret; i++) {
		map[i] = (uint8_t) i;
		ret = pmv_persist(&p, map, 64);
	}
	__atomic_store_n(&g_flip_stop, true, __ATOMIC_RELAXED);
	pthread_join(flipper, NULL);
	cr_assert_eq(ret, 0, "commit %d of a file read back failed (%d) while "
		     "stores landed at offset %zu of its page", i, ret, at);
	pmv_persistence_release(&p);
	munmap(map, LEN);
	close(fd);
}

Test(file, a_read_back_checks_the_range_while_its_page_changes,
     .timeout = 60)
{
	check_read_back_under_stores(2048);
}

/*
 * A PAGE region is persisted through pmemverbs's own view of its file:
 * pages that the application's mapping dirtied reach the disk by the
 * view's msync, with that mapping gone (over tcp, where the core's recv
 * dirtied them: no dirtying store, and nothing of the application's
 * mapping is used).
 */
Test(file, a_page_persist_writes_the_pages_through_its_own_view,
     .timeout = 60, .fini = wb_fs_teardown)
{
	struct pmv_persistence p;
	struct wb_fs *fs = &g_fs;
	uint8_t *map;
	int fd, ret;

	unsetenv("PMEM2_FORCE_GRANULARITY");
	wb_fs_setup(fs);
	map = map_file(fs->path, &fd);
	cr_assert_eq(fsync(fd), 0);
	cr_assert_eq(pmv_persistence_detect(map, LEN, &p), 0);
	cr_assert_eq(p.profile, FI_PMEM_PROFILE_PAGE);
	p.cpu_written = true;
	memset(map, 0x6b, PAGE);
	cr_assert_eq(munmap(map, LEN), 0);
	ret = pmv_persist(&p, map, PAGE);
	cr_assert_eq(ret, 0, "the persist failed (%d) once the application's "
		     "mapping was gone", ret);
	cr_assert_eq(wb_byte_on_disk(fs->path), 0x6b, "the page dirtied "
		     "through the application's mapping did not reach the "
		     "disk");
	pmv_persistence_release(&p);
	close(fd);
}
