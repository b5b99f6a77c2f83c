/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the test hooks of serving (parameters, see fi_pmemverbs(7)).
 *
 * FI_PMEMVERBS_ORACLE names a shared file where every persisted range is
 * recorded, so a test can check that a commit never completes before its
 * scope was persisted; FI_PMEMVERBS_FAULT_SKIP_EXTENT=N skips the N-th
 * persisted extent, to show that such a test can fail.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/pmv_oracle.h"
#include "target/pmv_target.h"

static struct pmv_oracle_log *pmv_oracle;
static size_t pmv_oracle_cap;
static pthread_once_t pmv_oracle_once = PTHREAD_ONCE_INIT;
static uint64_t pmv_extents_persisted;

/* Maps the oracle log the test named, once per process. */
static void pmv_oracle_open_once(void)
{
	struct stat st;
	void *mem;
	int fd;

	if (!pmv_params.oracle)
		return;
	fd = open(pmv_params.oracle, O_RDWR);
	if (fd < 0 || fstat(fd, &st) || (size_t) st.st_size < sizeof(*pmv_oracle)) {
		PMV_WARN(FI_LOG_DOMAIN, "FI_PMEMVERBS_ORACLE=%s: cannot open "
			 "the oracle log (%s): name a writable file\n",
			 pmv_params.oracle, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	mem = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (mem == MAP_FAILED)
		return;
	pmv_oracle = mem;
	pmv_oracle_cap = pmv_oracle_capacity(st.st_size);
}

/* Records a persisted range in the oracle log, if a test asked for one. */
void pmv_oracle_record(uint64_t key, uint64_t addr, uint64_t len)
{
	uint64_t i;

	if (!pmv_oracle)
		return;
	i = __atomic_fetch_add(&pmv_oracle->count, 1, __ATOMIC_ACQ_REL);
	if (i >= pmv_oracle_cap)
		return;
	pmv_oracle->rec[i].key = key;
	pmv_oracle->rec[i].addr = addr;
	pmv_oracle->rec[i].len = len;
	__atomic_store_n(&pmv_oracle->rec[i].valid, 1, __ATOMIC_RELEASE);
}

/* True when fault injection says to skip this extent. */
bool pmv_oracle_skip_extent(void)
{
	uint64_t n = __atomic_add_fetch(&pmv_extents_persisted, 1,
					__ATOMIC_RELAXED);

	return pmv_params.fault_skip > 0 && n == (uint64_t) pmv_params.fault_skip;
}

/* Maps the oracle log the test named (FI_PMEMVERBS_ORACLE), once. */
void pmv_serve_init(void)
{
	pthread_once(&pmv_oracle_once, pmv_oracle_open_once);
}
