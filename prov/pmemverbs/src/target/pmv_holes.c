/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the holes of a file-backed FI_RMA_PMEM region.
 *
 * A store into a hole of a shared file mapping makes the file system
 * allocate a block; when it has none, the kernel raises SIGBUS in the
 * storing thread.  The stores into a region are the core's (over tcp, its
 * progress copies the data in; libfabric's signal handler then ends the
 * process) and the agent's (placing send data, the dirtying store of a
 * PAGE persist, a cache flush).  So at fi_mr_reg(FI_RMA_PMEM), the holes
 * of the registered range are allocated (fallocate, the file's size
 * kept), and a file system that cannot hold them fails the registration
 * with -FI_ENOSPC, before any peer can write.  FI_PMEMVERBS_FILL_HOLES=0
 * leaves them (the application preallocates, or accepts the risk).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/pmv_target.h"

/* True if [off, off + len) of fd has a hole (or cannot be told). */
static bool pmv_range_has_hole(int fd, uint64_t off, uint64_t len)
{
	off_t hole = lseek(fd, (off_t) off, SEEK_HOLE);

	return hole < 0 || (uint64_t) hole < off + len;
}

int pmv_fill_holes(int fd, uint64_t off, uint64_t len)
{
	struct stat st;

	if (!pmv_params.fill_holes || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    off >= (uint64_t) st.st_size)
		return 0;
	if (len > (uint64_t) st.st_size - off)
		len = (uint64_t) st.st_size - off; /* past the end: no blocks */
	if (!pmv_range_has_hole(fd, off, len) ||
	    !fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t) off, (off_t) len))
		return 0;
	if (errno == ENOSPC || errno == EDQUOT) {
		PMV_WARN(FI_LOG_MR, "FI_RMA_PMEM: the file system of the "
			 "region's file cannot allocate its holes (%s): a "
			 "write into one would kill this process with SIGBUS; "
			 "the registration fails with FI_ENOSPC. Free space, "
			 "or preallocate the file (posix_fallocate)\n",
			 strerror(errno));
		return -FI_ENOSPC;
	}
	PMV_WARN(FI_LOG_MR, "FI_RMA_PMEM: cannot allocate the holes of the "
		 "region's file (%s); a write into one on a full file system "
		 "would kill this process with SIGBUS: preallocate the file\n",
		 strerror(errno));
	return 0;
}
