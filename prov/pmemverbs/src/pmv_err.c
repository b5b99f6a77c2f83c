/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the one table of commit errors.  Each PMV_ERR_* code (a
 * request's ack status, a commit's prov_errno) has the libfabric errno an
 * application sees (the entry's err, a call's -FI_E* return) and the text
 * fi_cq_strerror gives (fi_ext_pmem(3) lists them; check_man.py compares).
 */
#include "pmv.h"

static const struct pmv_err_desc {
	int fi_errno;
	const char *text;
} pmv_errs[PMV_ERR_LAST - PMV_ERR_BASE] = {
	[PMV_ERR_NO_KEY - PMV_ERR_BASE] = { FI_ENOKEY,
		"commit refused by the target: no region registered with "
		"that key" },
	[PMV_ERR_RANGE - PMV_ERR_BASE] = { FI_EINVAL,
		"commit refused by the target: a range lies outside the "
		"region" },
	[PMV_ERR_ACCESS - PMV_ERR_BASE] = { FI_EACCES,
		"commit refused by the target: the region was registered "
		"without FI_REMOTE_WRITE" },
	[PMV_ERR_MULTI_IOV - PMV_ERR_BASE] = { FI_EOPNOTSUPP,
		"commit refused by the target: the region was registered "
		"with several iovs; register persistent memory as one range" },
	[PMV_ERR_PEER_GONE - PMV_ERR_BASE] = { FI_ENOTCONN,
		"commit failed: the connection to the target is gone" },
	[PMV_ERR_FENCE - PMV_ERR_BASE] = { FI_EIO,
		"fenced commit failed: the writes before the fence could "
		"not be made durable" },
	[PMV_ERR_METHOD - PMV_ERR_BASE] = { FI_EOPNOTSUPP,
		"commit refused: FI_PMEMVERBS_METHOD names a method that is "
		"not correct for the profile the target reported for this "
		"key (use auto), or the commit carried data (FI_FENCE, "
		"send) for device memory the target cannot store into" },
	[PMV_ERR_CLOSED - PMV_ERR_BASE] = { FI_ECANCELED,
		"commit canceled: its endpoint was closed before the target "
		"acknowledged it; its durability is unknown" },
	[PMV_ERR_PEER_TIMEOUT - PMV_ERR_BASE] = { FI_ETIMEDOUT,
		"commit failed: the target did not answer within "
		"FI_PMEMVERBS_PEER_TIMEOUT_MS (frozen or unreachable); its "
		"durability is unknown: close the endpoint and connect "
		"again" },
	[PMV_ERR_PERSIST - PMV_ERR_BASE] = { FI_EIO,
		"commit failed: the target could not make the data durable "
		"(msync or flush failed, now or earlier on the region's "
		"file, or the file was truncated; see the target's log): "
		"its durability is unknown" },
	[PMV_ERR_BAD_REQUEST - PMV_ERR_BASE] = { FI_EINVAL,
		"commit refused by the target: a malformed request (unknown "
		"flags or fence count; a peer of another version?)" },
	[PMV_ERR_SCOPE_LOST - PMV_ERR_BASE] = { FI_EIO,
		"commit's durability unknown: a request naming an earlier "
		"write to this key failed; write the data again and commit" },
	[PMV_ERR_REREGISTERED - PMV_ERR_BASE] = { FI_EIO,
		"commit's durability unknown: the target closed the key's "
		"memory region, or registered it again, after the commit's "
		"writes were posted (they may be in memory that is gone); "
		"write the data again and commit" },
};

/* The entry of a PMV_ERR_* code, or NULL for another value. */
static const struct pmv_err_desc *pmv_err_desc(int prov_errno)
{
	if (prov_errno <= PMV_ERR_BASE || prov_errno >= PMV_ERR_LAST)
		return NULL;
	return &pmv_errs[prov_errno - PMV_ERR_BASE];
}

/* The text of a PMV_ERR_* code, or NULL for another value. */
const char *pmv_strerror(int prov_errno)
{
	const struct pmv_err_desc *d = pmv_err_desc(prov_errno);

	return d ? d->text : NULL;
}

/* The positive libfabric errno of a PMV_ERR_* code (FI_EINVAL if none). */
int pmv_err_to_fi(int prov_errno)
{
	const struct pmv_err_desc *d = pmv_err_desc(prov_errno);

	return d ? d->fi_errno : FI_EINVAL;
}
