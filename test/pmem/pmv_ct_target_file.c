/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_ct_target_file.c - Target: the region file (guards, mapping, device-DAX)
 * and registering its regions.
 */

#include "pmv_ct.h"

struct target g_t;

/* Creates the oracle log FI_PMEMVERBS_ORACLE names, empty, with its magic,
 * and keeps it mapped. */
void oracle_create(const char *path)
{
	size_t size = sizeof(struct pmv_oracle_log) +
		      ORACLE_RECS * sizeof(struct pmv_oracle_rec);
	struct pmv_oracle_log *log;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || ftruncate(fd, (off_t)size))
		die("creating oracle log %s: %s", path, strerror(errno));
	log = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (log == MAP_FAILED)
		die("mapping oracle log %s: %s", path, strerror(errno));
	log->count = 0;
	__atomic_store_n(&log->magic, PMV_ORACLE_MAGIC, __ATOMIC_RELEASE);
	close(fd);
	g_t.log = log;
}

/* Where region id starts in the file (both roles know the layout). */
size_t region_file_off(int id)
{
	size_t off = GUARD_SIZE;

	for (int i = 0; i < id; i++)
		off += k_regions[i].len + GUARD_SIZE;
	return off;
}

/* Lays the regions out in the file, each between guards. */
static size_t layout_regions(void)
{
	for (int i = 0; i < REG_COUNT; i++) {
		g_t.reg[i].file_off = region_file_off(i);
		g_t.reg[i].len = k_regions[i].len;
	}
	return region_file_off(REG_COUNT);
}

/* True if file offset off lies in a guard (in no region). */
bool in_guard(size_t off)
{
	for (int i = 0; i < REG_COUNT; i++)
		if (off >= g_t.reg[i].file_off &&
		    off < g_t.reg[i].file_off + k_regions[i].len)
			return false;
	return true;
}

/*
 * Maps the file shared, with MAP_SYNC where the file takes it (fsdax: CPU
 * flushes then suffice); writable for the test, read-only to check.
 */
uint8_t *map_file(int fd, size_t size, bool writable)
{
	int prot = PROT_READ | (writable ? PROT_WRITE : 0);
	void *p = mmap(NULL, size, prot, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);

	if (p == MAP_FAILED)
		p = mmap(NULL, size, prot, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		die("mmap of %s: %s", g_opt.file, strerror(errno));
	return p;
}

/*
 * The mapping alignment of a character device: device-DAX maps only whole
 * multiples of it (sysfs "align"; 2 MiB when sysfs does not say).
 */
size_t chardev_alignment(const struct stat *st)
{
	static const char *const fmts[] = { "/sys/dev/char/%u:%u/device/align",
					    "/sys/dev/char/%u:%u/align" };
	unsigned long long align = 0;

	for (size_t i = 0; i < ARRAY_LEN(fmts) && !align; i++) {
		char path[96];
		FILE *f;

		snprintf(path, sizeof(path), fmts[i], major(st->st_rdev),
			 minor(st->st_rdev));
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &align) != 1 || !align ||
		    (align & (align - 1)))
			align = 0;
		fclose(f);
	}
	return align ? (size_t)align : (size_t)2 << 20;
}

/*
 * Opens and maps the region file: a regular file is created afresh (zero,
 * sparse); a character device (device-DAX) is used as it is, no truncation,
 * mapped in whole multiples of its alignment and zeroed here.  Then the
 * guards get their pattern.
 */
void target_create_file(void)
{
	size_t layout = layout_regions(), align = (size_t)sysconf(_SC_PAGESIZE);
	struct stat st;

	if (!stat(g_opt.file, &st) && S_ISCHR(st.st_mode)) {
		g_t.chardev = true;
		align = chardev_alignment(&st);
		g_t.fd = open(g_opt.file, O_RDWR);
		if (g_t.fd < 0)
			die("opening %s: %s", g_opt.file, strerror(errno));
	} else {
		g_t.fd = open(g_opt.file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	}
	g_t.size = (layout + align - 1) / align * align;
	if (g_t.fd < 0 || (!g_t.chardev && ftruncate(g_t.fd, (off_t)g_t.size)))
		die("creating %s: %s", g_opt.file, strerror(errno));
	g_t.map = map_file(g_t.fd, g_t.size, true);
	if (g_t.chardev)
		memset(g_t.map, 0, g_t.size);
	for (size_t off = 0; off < g_t.size; off++)
		if (in_guard(off))
			g_t.map[off] = guard_byte(off);
	/* A device has no page cache (and device-DAX no fsync: msync fails
	 * with EINVAL); re-mapping it shows the same memory. */
	if (!g_t.chardev && msync(g_t.map, g_t.size, MS_SYNC))
		die("msync of %s: %s", g_opt.file, strerror(errno));
	for (int i = 0; i < REG_COUNT; i++)
		g_t.reg[i].addr = g_t.map + g_t.reg[i].file_off;
}

/* Registers region id with its current length; returns fi_mr_reg's code. */
/* Registers region id under its key on the memory at addr. */
int target_register_at(enum region_id id, uint8_t *addr)
{
	struct region *r = &g_t.reg[id];
	const struct region_spec *s = &k_regions[id];
	bool virt = g_net.mr_mode & FI_MR_VIRT_ADDR;
	int ret;

	r->mr = NULL;
	ret = fi_mr_reg(g_net.domain, addr, r->len, s->access, s->offset,
			region_key(id), s->flags, &r->mr, NULL);
	if (ret)
		return ret;
	track_fid(&r->mr->fid);
	r->key = fi_mr_key(r->mr);
	r->rma_base = virt ? (uint64_t)(uintptr_t)addr : 0;
	r->profile = g_net.pmem->mr_profile(r->mr);
	return 0;
}

int target_register(enum region_id id)
{
	return target_register_at(id, g_t.reg[id].addr);
}

/* Registers every region; only REG_OFFSET may be refused (reported). */
void target_register_all(void)
{
	for (int i = 0; i < REG_COUNT; i++) {
		g_t.reg[i].reg_status = target_register((enum region_id)i);
		if (g_t.reg[i].reg_status && i != REG_OFFSET)
			die("fi_mr_reg(%s): %s", k_regions[i].name,
			    errname(g_t.reg[i].reg_status));
	}
}

void target_send_regions(void)
{
	struct region_desc d[REG_COUNT];

	for (int i = 0; i < REG_COUNT; i++)
		d[i] = (struct region_desc){ .key = g_t.reg[i].key,
					     .rma_base = g_t.reg[i].rma_base,
					     .len = g_t.reg[i].len,
					     .profile = g_t.reg[i].profile,
					     .id = (uint32_t)i,
					     .reg_status = g_t.reg[i].reg_status };
	ctl_send(MSG_REGIONS, d, sizeof(d));
	g_t.regions_sent = true;
}

/*
 * Fills the tmpfs under the region file's loop device (full), or frees it:
 * full, writeback to new blocks of the file system fails.  NULL, or what
 * went wrong.
 */
static const char *wberr_fill(bool full)
{
	static char chunk[1 << 16];
	const char *dir = getenv("PMV_WBERR_FILL_DIR");
	char path[256];
	int fd, i;

	if (!dir)
		return "PMV_WBERR_FILL_DIR is not set (run_pmem_tests.sh sets "
		       "it for writeback-error)";
	snprintf(path, sizeof(path), "%s/fill", dir);
	if (!full)
		return unlink(path) ? "removing the fill file failed" : NULL;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return "creating the fill file failed";
	for (i = 0; i < 1 << 14 && write(fd, chunk, sizeof(chunk)) > 0; i++)
		;
	close(fd);
	return i < 1 << 14 ? NULL : "the tmpfs did not fill up (1 GiB)";
}

/* Reads 64 bytes at the file's offset off past the page cache. */
static const char *wberr_read_disk(size_t off, uint8_t out[64])
{
	size_t page = off & ~(size_t)4095;
	const char *err = NULL;
	void *buf = NULL;
	int fd = open(g_opt.file, O_RDONLY | O_DIRECT);

	if (fd < 0 || posix_memalign(&buf, 4096, 4096) ||
	    pread(fd, buf, 4096, (off_t)page) != 4096 || off - page > 4096 - 64)
		err = "reading the file with O_DIRECT failed";
	else
		memcpy(out, (uint8_t *)buf + (off - page), 64);
	free(buf);
	if (fd >= 0)
		close(fd);
	return err;
}

/* How often WB_RECOVER asks the kernel to drop the pages (1 ms apart). */
#define WB_PAGEOUT_TRIES 100

/*
 * Drops the clean pages of [p, p + len), at file offset off, from memory
 * and sees them gone (mincore).  MADV_PAGEOUT skips a page it cannot take:
 * one still in another CPU's batch of pages on their way to the LRU lists
 * (with the other core busy, 1 run in 18 kept it, and 1 in 20 still kept
 * it after 100 tries 1 ms apart).  POSIX_FADV_DONTNEED drains every CPU's
 * batch (it drops no mapped page itself).  A page the failed writeback
 * left in memory is another case (keep).  NULL, or what went wrong.
 */
static const char *wberr_drop(uint8_t *p, size_t len, off_t off)
{
	unsigned char in_memory[64];
	size_t pages = len / 4096;
	bool kept = true;
	int fd = open(g_opt.file, O_RDONLY);

	if (fd < 0 || pages > sizeof(in_memory)) {
		if (fd >= 0)
			close(fd);
		return "cannot open the file, or the range is over 64 pages";
	}
	for (int i = 0; i < WB_PAGEOUT_TRIES && kept; i++) {
		if (i)
			usleep(1000);
		if (posix_fadvise(fd, off, (off_t) len, POSIX_FADV_DONTNEED) ||
		    madvise(p, len, MADV_PAGEOUT) || mincore(p, len, in_memory)) {
			close(fd);
			return "fadvise, madvise(MADV_PAGEOUT) or mincore failed";
		}
		kept = false;
		for (size_t j = 0; j < pages; j++)
			kept |= in_memory[j] & 1;
	}
	close(fd);
	return kept ? "the kernel kept a page in memory after 100 "
		      "MADV_PAGEOUT" : NULL;
}

/* Case writeback-error: one phase (enum wberr_phase) on the region file. */
void target_on_wberr(const struct wberr_req *req)
{
	uint8_t *p = g_t.reg[req->region].addr + req->off;
	struct wberr_rsp rsp = { 0 };
	const char *err = NULL;

	if (req->phase == WB_FAIL) {
		err = wberr_fill(true);
		if (!err && !msync(p, req->len, MS_SYNC))
			err = "writeback to the full device succeeded: no "
			      "error to test";
	} else if (req->phase == WB_RECOVER) {
		err = wberr_fill(false);
		if (!err && !req->keep)
			err = wberr_drop(p, req->len,
					 (off_t) (g_t.reg[req->region].file_off +
						  req->off));
	} else {
		err = wberr_read_disk(g_t.reg[req->region].file_off + req->off,
				      rsp.disk);
	}
	if (err) {
		rsp.status = -FI_EOTHER;
		snprintf(rsp.detail, sizeof(rsp.detail), "%s (errno: %s)", err,
			 strerror(errno));
	}
	ctl_send(MSG_WBERR_DONE, &rsp, sizeof(rsp));
}
