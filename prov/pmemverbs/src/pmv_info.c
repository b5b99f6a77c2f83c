/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: fi_getinfo, and fi_info translation between pmemverbs and the
 * core provider.
 *
 * pmemverbs offers FI_EP_MSG endpoints built on the core's MSG endpoints.
 * FI_EP_RDM comes from libfabric layering ofi_rxm over pmemverbs
 * ("pmemverbs;ofi_rxm"), exactly as it layers ofi_rxm over verbs; RDM
 * hints that ask FI_RMA_PMEM get pmemverbs's own RDM entries, thin
 * wrappers of that stack (pmv_rdm.h, pmv_rdm_info.c).  Wrapping
 * the core's own "tcp;ofi_rxm" instead is not possible under
 * FI_PROVIDER=pmemverbs: libfabric 1.17 hides the filtered-out core, and
 * ofi_rxm's fabric open looks it up without OFI_GETINFO_HIDDEN.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pmv_objects.h"
#include "pmv_rdm.h"

static const char *pmv_core;
static pthread_once_t pmv_core_once = PTHREAD_ONCE_INIT;

/* Queries the (possibly hidden) core provider for MSG endpoints. */
static int pmv_core_getinfo(uint32_t version, const char *node,
			    const char *service, uint64_t flags,
			    const struct fi_info *core_hints,
			    struct fi_info **info)
{
	return fi_getinfo(version, node, service,
			  flags | PMV_OFI_GETINFO_HIDDEN | PMV_OFI_CORE_PROV_ONLY,
			  core_hints, info);
}

/* True when the named core provider answers for MSG endpoints here. */
static bool pmv_core_usable(const char *name)
{
	struct fi_info *hints, *info = NULL;
	int ret;

	hints = pmv_hints_to_core(NULL, name);
	if (!hints)
		return false;
	ret = pmv_core_getinfo(PMV_FI_VERSION, NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	fi_freeinfo(info);
	return ret == 0;
}

/* A name pmemverbs can layer on: a core provider, not itself or a stack. */
static bool pmv_core_name_valid(const char *name)
{
	return strcasecmp(name, PMV_PROV_NAME) && !strchr(name, ';') &&
	       strncasecmp(name, "ofi_", 4);
}

static void pmv_choose_core(void)
{
	const char *wanted = pmv_params.core_prov;

	if (wanted) {
		if (!pmv_core_name_valid(wanted))
			PMV_WARN(FI_LOG_CORE, "FI_PMEMVERBS_CORE_PROV=%s is not "
				 "a core provider pmemverbs can layer on; set "
				 "it to verbs or tcp\n", wanted);
		else if (!pmv_core_usable(wanted))
			PMV_WARN(FI_LOG_CORE, "FI_PMEMVERBS_CORE_PROV=%s: that "
				 "provider offers no MSG endpoint here (unknown "
				 "name, or no device; `fi_info -l` lists the "
				 "providers); use verbs or tcp\n", wanted);
		else
			pmv_core = wanted;
	} else {
		pmv_core = pmv_core_usable("verbs") ? "verbs" : "tcp";
	}
	if (pmv_core)
		PMV_INFO(FI_LOG_CORE, "core provider: %s\n", pmv_core);
}

/* The core provider's name, chosen once per process; NULL if misconfigured. */
const char *pmv_core_name(void)
{
	pthread_once(&pmv_core_once, pmv_choose_core);
	return pmv_core;
}

#define PMV_RMA_BITS (FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | \
		      FI_REMOTE_WRITE)

/*
 * The core gets no FI_RMA_PMEM or FI_COMMIT_COMPLETE from pmemverbs: the
 * durability decision is never passed down.  A pmem endpoint needs RMA both
 * ways for its commit requests and acks, and a thread-safe core domain, as
 * its agent thread writes acks.
 */
static void pmv_caps_to_core(struct fi_info *info)
{
	bool pmem = info->caps & FI_RMA_PMEM;

	info->caps &= ~FI_RMA_PMEM;
	info->tx_attr->caps &= ~FI_RMA_PMEM;
	info->rx_attr->caps &= ~FI_RMA_PMEM;
	info->tx_attr->op_flags &= ~FI_COMMIT_COMPLETE;
	if (!pmem)
		return;
	info->caps |= PMV_RMA_BITS;
	if (info->tx_attr->caps)
		info->tx_attr->caps |= PMV_RMA_BITS;
	if (info->rx_attr->caps)
		info->rx_attr->caps |= PMV_RMA_BITS;
	info->domain_attr->threading = FI_THREAD_SAFE;
}

/* Copies application hints (NULL allowed) into hints for the core's MSG. */
struct fi_info *pmv_hints_to_core(const struct fi_info *hints,
				  const char *core_name)
{
	struct fi_info *core_hints = fi_dupinfo(hints);

	if (!core_hints || !pmv_info_complete(core_hints)) {
		fi_freeinfo(core_hints);
		return NULL;
	}
	if (!hints) {
		/* NULL hints accept every mode and memory registration mode;
		 * empty ones would accept none (verbs needs several). */
		core_hints->mode = ~0ULL;
		core_hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_RAW |
			FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
			FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT | FI_MR_ENDPOINT |
			FI_MR_HMEM;
	}
	free(core_hints->fabric_attr->prov_name);
	core_hints->fabric_attr->prov_name = strdup(core_name);
	core_hints->ep_attr->type = FI_EP_MSG;
	if (pmv_rdm_unmark(core_hints)) { /* ofi_rxm's core beneath RDM */
		fi_freeinfo(core_hints);
		return NULL;
	}
	pmv_caps_to_core(core_hints);
	if (!core_hints->fabric_attr->prov_name) {
		fi_freeinfo(core_hints);
		return NULL;
	}
	return core_hints;
}

/* True when the application's hints leave room for FI_RMA_PMEM. */
static bool pmv_hints_allow_pmem(const struct fi_info *hints)
{
	return !hints || !hints->caps || (hints->caps & FI_RMA_PMEM);
}

/*
 * Advertises FI_RMA_PMEM where the core has RMA and the application did not
 * ask for a set of capabilities without it (the core may list it itself).
 */
static void pmv_caps_from_core(struct fi_info *info,
			       const struct fi_info *hints)
{
	uint64_t pmem = ((info->caps & FI_RMA) && pmv_hints_allow_pmem(hints)) ?
			FI_RMA_PMEM : 0;

	info->caps = (info->caps & ~FI_RMA_PMEM) | pmem;
	info->tx_attr->caps = (info->tx_attr->caps & ~FI_RMA_PMEM) | pmem;
	info->rx_attr->caps = (info->rx_attr->caps & ~FI_RMA_PMEM) | pmem;
	info->tx_attr->op_flags &= ~FI_COMMIT_COMPLETE;
	/* the top bytes of remote CQ data mark gated writes (pmv_gate.c) */
	if (pmem && info->domain_attr->cq_data_size > PMV_APP_CQ_DATA_MAX)
		info->domain_attr->cq_data_size = PMV_APP_CQ_DATA_MAX;
	if (pmem && hints && hints->tx_attr)
		info->tx_attr->op_flags |= hints->tx_attr->op_flags &
					   FI_COMMIT_COMPLETE;
}

/* Rewrites one core fi_info in place into a pmemverbs fi_info. */
int pmv_info_from_core(struct fi_info *info, const struct fi_info *hints)
{
	/* libfabric names entries returned by getinfo; NULL lets it do so. */
	free(info->fabric_attr->prov_name);
	info->fabric_attr->prov_name = NULL;
	info->fabric_attr->fabric = NULL;
	info->domain_attr->domain = NULL;
	pmv_caps_from_core(info, hints);
	return 0;
}

/* True if the entry meets what the hints ask of pmemverbs itself. */
static bool pmv_info_meets_hints(const struct fi_info *info,
				 const struct fi_info *hints)
{
	if (!hints)
		return true;
	if ((hints->caps & FI_RMA_PMEM) && !(info->caps & FI_RMA_PMEM))
		return false;
	return !(hints->tx_attr &&
		 (hints->tx_attr->op_flags & FI_COMMIT_COMPLETE) &&
		 !(info->tx_attr->op_flags & FI_COMMIT_COMPLETE));
}

/* Builds the core's fi_info for a pmemverbs fi_info the application passed. */
struct fi_info *pmv_info_to_core(const struct fi_info *info)
{
	const char *core_name = pmv_core_name();
	struct fi_info *core_info;

	if (!core_name)
		return NULL;
	core_info = pmv_hints_to_core(info, core_name);
	if (!core_info)
		return NULL;
	core_info->handle = pmv_core_fid(info->handle); /* connreq or ep */
	if (info->fabric_attr && info->fabric_attr->fabric)
		core_info->fabric_attr->fabric = (struct fid_fabric *)
			pmv_core_fid(&info->fabric_attr->fabric->fid);
	if (info->domain_attr && info->domain_attr->domain)
		core_info->domain_attr->domain = (struct fid_domain *)
			pmv_core_fid(&info->domain_attr->domain->fid);
	return core_info;
}

/* Rewrites the core's MSG entries that meet the hints; drops the rest. */
static struct fi_info *pmv_keep_msg_entries(struct fi_info *list,
					    const struct fi_info *hints)
{
	struct fi_info *head = NULL, **tail = &head, *cur, *next;

	for (cur = list; cur; cur = next) {
		next = cur->next;
		cur->next = NULL;
		if (cur->ep_attr->type != FI_EP_MSG) {
			fi_freeinfo(cur);
			continue;
		}
		pmv_info_from_core(cur, hints);
		if (!pmv_info_meets_hints(cur, hints)) {
			fi_freeinfo(cur);
			continue;
		}
		*tail = cur;
		tail = &cur->next;
	}
	return head;
}

static bool pmv_hints_want_msg(const struct fi_info *hints)
{
	return !hints || !hints->ep_attr ||
	       hints->ep_attr->type == FI_EP_UNSPEC ||
	       hints->ep_attr->type == FI_EP_MSG;
}

/* MSG entries of the core for these hints, rewritten for pmemverbs. */
static int pmv_msg_getinfo(uint32_t version, const char *node,
			   const char *service, uint64_t flags,
			   const struct fi_info *hints, struct fi_info **info)
{
	const char *core_name = pmv_core_name();
	struct fi_info *core_hints, *core_info = NULL;
	int ret;

	core_hints = pmv_hints_to_core(hints, core_name);
	if (!core_hints)
		return -FI_ENOMEM;
	ret = pmv_core_getinfo(version, node, service, flags, core_hints,
			       &core_info);
	fi_freeinfo(core_hints);
	if (ret) {
		PMV_INFO(FI_LOG_CORE, "core provider %s: no MSG endpoint for "
			 "these hints (%s)\n", core_name, fi_strerror(-ret));
		return ret;
	}
	*info = pmv_keep_msg_entries(core_info, hints);
	return *info ? 0 : -FI_ENODATA;
}

int pmv_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info)
{
	struct fi_info *unmarked;
	int ret;

	*info = NULL;
	if (pmv_params.config_error || !pmv_core_name())
		return -FI_EINVAL; /* a bad FI_PMEMVERBS_*, warned at load */
	if (pmv_rdm_hints_want_pmem(hints))
		return pmv_rdm_getinfo(version, node, service, flags, hints,
				       info);
	if (!pmv_hints_want_msg(hints))
		return -FI_ENODATA;
	/* ofi_rxm opening the MSG core of a pmemverbs RDM object */
	ret = pmv_rdm_unmark_hints(hints, &unmarked);
	if (ret)
		return ret;
	ret = pmv_msg_getinfo(version, node, service, flags,
			      unmarked ? unmarked : hints, info);
	fi_freeinfo(unmarked);
	if (!ret && unmarked)
		ret = pmv_rdm_mark_entries(*info);
	return ret;
}
