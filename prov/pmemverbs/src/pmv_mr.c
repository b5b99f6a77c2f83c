/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: memory registration.
 *
 * A pmemverbs MR publishes the core MR's key and descriptor as its own, so
 * data-path calls pass descriptors and keys to the core untranslated.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <libpmem2.h>

#include "pmv_objects.h"

/* MR flags pmemverbs defines: FI_RMA_PMEM, FI_UNCACHED (bit 60). */
#define PMV_MR_OWN_FLAGS (FI_RMA_PMEM | FI_UNCACHED)
#define PMV_MR_UNKNOWN_BITS ((1ULL << 61) | (1ULL << 62) | (1ULL << 63))

/*
 * The core registration is gone: no write can land in the region any
 * more.  It leaves the table the agent serves requests from, and a region
 * registered from now on (under the same key, say) gets a newer
 * generation than any write placed in this one was posted under.  The
 * peers' read-flushes read it; they get the new table, without it.
 */
static void pmv_mr_gone(struct pmv_mr *mr)
{
	struct pmv_domain *dom = mr->domain;

	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	if (mr->pprev) { /* listed (not when fi_close failed before) */
		*mr->pprev = mr->next;
		if (mr->next)
			mr->next->pprev = mr->pprev;
		mr->pprev = NULL;
		pmv_mr_index_remove(dom, mr);
	}
	pmv_domain_publish_gen(dom);
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	pmv_domain_publish_profiles(dom);
}

/*
 * Closes the core registration first: if that fails, the region is still
 * registered (writes still land in it) and stays in the agent's table.
 * A request being served on it finishes before it is freed (it persists
 * bytes that landed before the close; no lock is held while it waits).
 */
static int pmv_mr_close(struct fid *fid)
{
	struct pmv_mr *mr = pmv_container_of(fid, struct pmv_mr, mr_fid.fid);
	int ret = pmv_close_core(&mr->core->fid, "memory region");

	if (ret)
		return ret;
	pmv_mr_gone(mr);
	while (__atomic_load_n(&mr->refs, __ATOMIC_ACQUIRE))
		sched_yield();
	pmv_persistence_release(&mr->persistence);
	pmv_domain_release(mr->domain, PMV_DOM_MR);
	free(mr);
	return 0;
}

/* Binds the MR to an endpoint or counter (FI_MR_ENDPOINT, FI_RMA_EVENT). */
static int pmv_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct pmv_mr *mr = pmv_container_of(fid, struct pmv_mr, mr_fid.fid);

	return pmv_bind_core(&mr->core->fid, bfid, flags);
}

/*
 * fi_mr_enable and fi_mr_refresh; the key may be known only after enable
 * (FI_MR_ENDPOINT), and then the peers learn its profile.
 */
static int pmv_mr_control(struct fid *fid, int command, void *arg)
{
	struct pmv_mr *mr = pmv_container_of(fid, struct pmv_mr, mr_fid.fid);
	struct pmv_domain *dom = mr->domain;
	int ret = fi_control(&mr->core->fid, command, arg);

	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	mr->mr_fid.key = mr->core->key;
	mr->mr_fid.mem_desc = mr->core->mem_desc;
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	if (!ret && command == FI_ENABLE)
		pmv_domain_publish_profiles(dom);
	return ret;
}

static struct fi_ops pmv_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pmv_mr_close,
	.bind = pmv_mr_bind,
	.control = pmv_mr_control,
	.ops_open = pmv_ops_open_core,
	.ops_set = pmv_no_ops_set,
};

/*
 * Finds the region's profile (FI_RMA_PMEM) or makes it VOLATILE; from the
 * application's pmem2 map when it gave one.
 */
static int pmv_mr_persistence(struct pmv_mr *mr, const struct fi_mr_attr *attr,
			      uint64_t flags, struct pmem2_map *map)
{
	int ret;

	if (!(flags & FI_RMA_PMEM)) {
		pmv_persistence_volatile(&mr->persistence);
		return 0;
	}
	if (!(mr->domain->caps & FI_RMA_PMEM)) {
		PMV_WARN(FI_LOG_MR, "fi_mr_reg(FI_RMA_PMEM) on a domain opened "
			 "without FI_RMA_PMEM in its caps: no endpoint of it "
			 "could make commits durable; ask for FI_RMA_PMEM in "
			 "the hints' caps\n");
		return -FI_EOPNOTSUPP;
	}
	if (attr->iov_count != 1) {
		PMV_WARN(FI_LOG_MR, "FI_RMA_PMEM: register persistent memory "
			 "as one range (iov_count %zu)\n", attr->iov_count);
		return -FI_EINVAL;
	}
	if (attr->iface != FI_HMEM_SYSTEM) {
		PMV_WARN(FI_LOG_MR, "FI_RMA_PMEM: device memory (FI_HMEM "
			 "interface %d) cannot be persistent memory; register "
			 "host memory\n", (int) attr->iface);
		return -FI_EOPNOTSUPP;
	}
	ret = map ? pmv_persistence_from_map(map, &mr->persistence) :
	      pmv_persistence_detect(attr->mr_iov[0].iov_base,
				     attr->mr_iov[0].iov_len,
				     &mr->persistence);
	/* the tcp core's recv stores every write: no page to re-dirty (any
	 * other core, verbs or not, may place writes by DMA) */
	mr->persistence.cpu_written = mr->domain->fabric &&
				      mr->domain->fabric->core_name &&
				      !strcasecmp(mr->domain->fabric->core_name,
						  "tcp");
	return ret;
}

/*
 * Keeps what the agent needs to check and persist commits to this region,
 * and tells the peers its profile (before the application can send them
 * its key).
 */
static int pmv_mr_describe(struct pmv_mr *mr, const struct fi_mr_attr *attr,
			   uint64_t flags)
{
	struct pmv_domain *dom = mr->domain;
	int ret;

	mr->access = attr->access;
	mr->flags = flags;
	mr->iface = attr->iface; /* the agent places data in host memory only */
	mr->iov_count = attr->iov_count;
	if (attr->iov_count) {
		mr->base = attr->mr_iov[0].iov_base;
		mr->len = attr->mr_iov[0].iov_len;
	}
	/* Without FI_MR_VIRT_ADDR, RMA addresses are offsets from the start
	 * of the region (fi_mr_reg's offset argument is reserved, as in the
	 * core). */
	mr->rma_base = (dom->mr_mode & FI_MR_VIRT_ADDR) ?
		       (uint64_t) (uintptr_t) mr->base : 0;
	pmv_lock(&dom->lock, PMV_LOCK_DOMAIN);
	mr->reg_gen = (uint32_t) dom->mr_gen;
	ret = pmv_mr_index_add(dom, mr);
	if (!ret) {
		mr->next = dom->mrs;
		if (mr->next)
			mr->next->pprev = &mr->next;
		mr->pprev = &dom->mrs;
		dom->mrs = mr;
	}
	pmv_unlock(&dom->lock, PMV_LOCK_DOMAIN);
	if (ret)
		return ret;
	pmv_domain_publish_profiles(dom);
	return 0;
}

/*
 * The verbs core pins the pages it registers, and Linux refuses to pin the
 * pages of a file on a DAX filesystem (fsdax): say so, and what works.
 */
static void pmv_mr_explain_failure(const struct pmv_mr *mr, int ret)
{
	bool file_backed = mr->persistence.profile != FI_PMEM_PROFILE_VOLATILE;

	if (ret == -FI_EOPNOTSUPP && file_backed &&
	    !strcasecmp(mr->domain->fabric->core_name, "verbs")) {
		PMV_WARN(FI_LOG_MR, "fi_mr_reg: the verbs core cannot register "
			 "this file mapping: Linux does not pin pages of files "
			 "on a DAX filesystem (fsdax) for RDMA. Use device-DAX "
			 "(/dev/daxX.Y) for persistent memory over verbs, or a "
			 "core that does not pin pages "
			 "(FI_PMEMVERBS_CORE_PROV=tcp)\n");
		return;
	}
	PMV_WARN(FI_LOG_MR, "fi_mr_reg: the %s core refused the registration: "
		 "%s\n", mr->domain->fabric->core_name, fi_strerror(-ret));
}

/* Registers a region; its persistence from map, if given, else detected. */
static int pmv_mr_register(struct pmv_domain *dom,
			   const struct fi_mr_attr *attr, uint64_t flags,
			   struct pmem2_map *map, struct fid_mr **mr_fid)
{
	struct fi_mr_attr core_attr = *attr;
	struct pmv_mr *mr;
	int ret;

	if (flags & PMV_MR_UNKNOWN_BITS) {
		PMV_WARN(FI_LOG_MR, "fi_mr_reg: unknown provider flag bits "
			 "0x%llx; pmemverbs defines FI_UNCACHED (bit 60)\n",
			 (unsigned long long) (flags & PMV_MR_UNKNOWN_BITS));
		return -FI_EBADFLAGS;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = dom;
	ret = pmv_mr_persistence(mr, attr, flags, map);
	if (ret) {
		free(mr);
		return ret;
	}
	core_attr.context = mr;
	ret = pmv_fault(PMV_FAULT_MR_REG) ? -FI_ENOMEM :
	      fi_mr_regattr(dom->core, &core_attr, flags & ~PMV_MR_OWN_FLAGS,
			    &mr->core);
	if (ret) {
		pmv_mr_explain_failure(mr, ret);
		pmv_persistence_release(&mr->persistence);
		free(mr);
		return ret;
	}
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &pmv_mr_fi_ops;
	mr->mr_fid.key = mr->core->key;
	mr->mr_fid.mem_desc = mr->core->mem_desc;
	ret = pmv_mr_describe(mr, attr, flags);
	if (ret) {
		PMV_WARN(FI_LOG_MR, "fi_mr_reg: no memory to index the "
			 "region; free memory and register again\n");
		(void) fi_close(&mr->core->fid);
		pmv_persistence_release(&mr->persistence);
		free(mr);
		return ret;
	}
	pmv_domain_hold(dom, PMV_DOM_MR);
	*mr_fid = &mr->mr_fid;
	return 0;
}

static int pmv_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			  uint64_t flags, struct fid_mr **mr_fid)
{
	return pmv_mr_register(pmv_container_of(fid, struct pmv_domain,
						domain_fid.fid),
			       attr, flags, NULL, mr_fid);
}

/* FI_PMEM_DOMAIN_OPS mr_reg_pmem2: a range of an application's pmem2 map. */
int pmv_mr_reg_pmem2(struct fid_domain *domain, struct pmem2_map *map,
		     size_t offset, size_t len, uint64_t access,
		     uint64_t requested_key, uint64_t flags,
		     struct fid_mr **mr, void *context)
{
	struct iovec iov;
	struct fi_mr_attr attr = { .mr_iov = &iov, .iov_count = 1,
				   .access = access,
				   .requested_key = requested_key,
				   .context = context };

	if (!domain || !pmv_fid_is_ours(&domain->fid) ||
	    domain->fid.fclass != FI_CLASS_DOMAIN) {
		PMV_WARN(FI_LOG_MR, "mr_reg_pmem2: not a pmemverbs domain\n");
		return -FI_EINVAL;
	}
	if (!map || offset > pmem2_map_get_size(map) ||
	    len > pmem2_map_get_size(map) - offset) {
		PMV_WARN(FI_LOG_MR, "mr_reg_pmem2: %zu bytes at offset %zu "
			 "lie outside the pmem2 map (%zu bytes)\n", len,
			 offset, map ? pmem2_map_get_size(map) : 0);
		return -FI_EINVAL;
	}
	iov.iov_base = (char *) pmem2_map_get_address(map) + offset;
	iov.iov_len = len;
	return pmv_mr_register(pmv_container_of(domain, struct pmv_domain,
						domain_fid),
			       &attr, flags | FI_RMA_PMEM, map, mr);
}

static int pmv_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		       uint64_t access, uint64_t offset, uint64_t requested_key,
		       uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
	};

	return pmv_mr_regattr(fid, &attr, flags, mr);
}

static int pmv_mr_reg(struct fid *fid, const void *buf, size_t len,
		      uint64_t access, uint64_t offset, uint64_t requested_key,
		      uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return pmv_mr_regv(fid, &iov, 1, access, offset, requested_key, flags,
			   mr, context);
}

struct fi_ops_mr pmv_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = pmv_mr_reg,
	.regv = pmv_mr_regv,
	.regattr = pmv_mr_regattr,
};
